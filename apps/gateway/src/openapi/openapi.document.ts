import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, type ReferenceObject, type SchemaObject, SwaggerModule } from '@nestjs/swagger';
import { describeCrossCutting } from './cross-cutting.js';
import { CONSOLE_PATH, CONSOLE_PATH_ITEM } from '../console/console-page.js';
import { TRACKING_PAGE_PATH, TRACKING_PAGE_PATH_ITEM } from '../share-links/tracking-page.js';
import { DOCS_PATH, DOCS_PATH_ITEM } from './docs-page.js';
import { API_DESCRIPTION, API_TITLE, productVersion, TAGS } from './openapi.description.js';

export const OPENAPI_VERSION = '3.1.0';

/**
 * The gateway's OpenAPI 3.1 document, from the controllers' decorators and DTOs. @nestjs/swagger writes
 * 3.1 when asked to (`nullable: true` becomes a `null` type or a `{ type: 'null' }` alternative); what
 * remains is done here: schema `example` becomes 3.1's `examples`, and what every route has in common
 * is added by `describeCrossCutting`.
 */
export function createOpenApiDocument(app: INestApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setOpenAPIVersion(OPENAPI_VERSION)
    .setTitle(API_TITLE)
    .setVersion(productVersion())
    .setDescription(API_DESCRIPTION)
    .addServer('/', 'The gateway that serves this document')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: 'An access token from POST /v1/applications/token (ES256, valid 86400 s).',
      },
      'bearer',
    );
  for (const { name, description } of TAGS) builder.addTag(name, description);
  const document = SwaggerModule.createDocument(app, builder.build(), { operationIdFactory });
  document.paths[DOCS_PATH] = DOCS_PATH_ITEM;
  document.paths[`${TRACKING_PAGE_PATH}/{token}`] = TRACKING_PAGE_PATH_ITEM;
  document.paths[CONSOLE_PATH] = CONSOLE_PATH_ITEM;
  describeCrossCutting(document);
  useSchemaExamples(document);
  return document;
}

/** `shipmentsList`, `devicesRetire`, `authIssueToken`: the controller's name, then the method's. */
function operationIdFactory(controllerKey: string, methodKey: string): string {
  const controller = controllerKey.replace(/Controller$/, '');
  return `${controller.charAt(0).toLowerCase()}${controller.slice(1)}${methodKey.charAt(0).toUpperCase()}${methodKey.slice(1)}`;
}

type Schema = SchemaObject | ReferenceObject;

/**
 * Schema `example` (deprecated in 3.1) becomes JSON Schema's `examples` array; examples of parameters,
 * headers and media types are not schemas and keep their `example`.
 */
function useSchemaExamples(document: OpenAPIObject): void {
  for (const schema of Object.values(document.components?.schemas ?? {})) convertExamples(schema);
  for (const header of Object.values(document.components?.headers ?? {})) if ('schema' in header) convertExamples(header.schema);
  for (const item of Object.values(document.paths)) {
    for (const operation of [item.get, item.put, item.post, item.delete, item.patch]) {
      if (!operation) continue;
      for (const parameter of operation.parameters ?? []) if ('schema' in parameter) convertExamples(parameter.schema);
      if (operation.requestBody && 'content' in operation.requestBody) {
        for (const media of Object.values(operation.requestBody.content)) convertExamples(media.schema);
      }
      for (const response of Object.values(operation.responses)) {
        if (response && 'content' in response) for (const media of Object.values(response.content ?? {})) convertExamples(media.schema);
      }
    }
  }
}

function convertExamples(schema: Schema | undefined): void {
  if (!schema || '$ref' in schema) return;
  if ('example' in schema) {
    schema.examples = [schema.example];
    delete schema.example;
  }
  for (const property of Object.values(schema.properties ?? {})) convertExamples(property);
  for (const member of [...(schema.allOf ?? []), ...(schema.oneOf ?? []), ...(schema.anyOf ?? [])]) convertExamples(member);
  convertExamples(schema.items);
  convertExamples(schema.not);
  if (typeof schema.additionalProperties === 'object') convertExamples(schema.additionalProperties);
}
