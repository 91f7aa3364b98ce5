import { randomUUID } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { CONSOLE_FILES_PATH, CONSOLE_PATH } from '../../apps/gateway/src/console/console-page.js';
import { DOCS_PATH } from '../../apps/gateway/src/openapi/docs-page.js';
import { MAPS_PATH, TRACKING_PAGE_PATH } from '../../apps/gateway/src/share-links/tracking-page.js';

/** A JSON schema of the OpenAPI document, loosely typed: tests read only a few keywords. */
export interface Schema {
  $ref?: string;
  allOf?: Schema[];
  type?: string;
  format?: string;
  enum?: unknown[];
  example?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  minimum?: number;
  nullable?: boolean;
}

interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses: Record<string, unknown>;
}

/** One route the running gateway serves, with what its OpenAPI description says about it. */
export interface CatalogRoute {
  method: string;
  /** In Fastify's syntax: `/v1/accounts/:accountId/shipments/:shipmentId`. */
  path: string;
  /** `METHOD path`, for messages and lookups. */
  key: string;
  /** Path parameter names, in path order. */
  params: string[];
  /** False for routes left out of the API reference (health). */
  documented: boolean;
  /** Statuses the API reference lists for the route. */
  statuses: number[];
  queryParameters: string[];
  /** The JSON body's schema, `$ref`s resolved, when the route takes one. */
  bodySchema?: Schema;
}

/** The gateway's routes and their OpenAPI description, read from the running application. */
export class RouteCatalog {
  private constructor(
    readonly routes: CatalogRoute[],
    private readonly document: OpenAPIObject,
  ) {}

  /**
   * Every route of the gateway's Fastify router (HEAD left out: Fastify derives it from GET), each with
   * the operation the OpenAPI document built from the same controllers gives it. So a route added
   * later is in the catalog without anyone listing it.
   */
  static of(app: NestFastifyApplication): RouteCatalog {
    const instance = app.getHttpAdapter().getInstance();
    const document = SwaggerModule.createDocument(app, new DocumentBuilder().build());
    const routes = fastifyRoutes(instance.printRoutes({ commonPrefix: false }))
      .filter(({ method }) => method !== 'HEAD')
      // The interactive reference (an HTML page, its scripts and styles) is no JSON API to probe.
      .filter(({ path }) => path !== DOCS_PATH && !path.startsWith(`${DOCS_PATH}/`))
      // So is the share links' tracking page, with the map files it loads.
      .filter(({ path }) => !path.startsWith(`${TRACKING_PAGE_PATH}/`) && !path.startsWith(MAPS_PATH))
      // And the console (a page of its own, and its scripts and styles).
      .filter(({ path }) => path !== CONSOLE_PATH && !path.startsWith(CONSOLE_FILES_PATH))
      .map(({ method, path }) => {
        if (!instance.hasRoute({ method: method as never, url: path })) {
          throw new Error(`route-catalog: parsed ${method} ${path} from printRoutes, but Fastify does not know it`);
        }
        const operation = document.paths[openApiPath(path)]?.[method.toLowerCase() as 'get'] as Operation | undefined;
        const body = operation?.requestBody?.content?.['application/json']?.schema;
        return {
          method,
          path,
          key: `${method} ${path}`,
          params: [...path.matchAll(/:(\w+)/g)].map((match) => match[1]!),
          documented: operation !== undefined,
          statuses: Object.keys(operation?.responses ?? {}).map(Number),
          queryParameters: (operation?.parameters ?? []).filter((parameter) => parameter.in === 'query').map(({ name }) => name),
          bodySchema: body && resolveSchema(document, body),
        } satisfies CatalogRoute;
      });
    return new RouteCatalog(routes, document);
  }

  /** The routes under `/v1/accounts/{accountId}`. */
  get accountRoutes(): CatalogRoute[] {
    return this.routes.filter((route) => route.path.startsWith('/v1/accounts/:accountId/'));
  }

  /** `schema` with its `$ref` (or the single `allOf` the enums use) replaced by the referenced schema. */
  resolve(schema: Schema): Schema {
    return resolveSchema(this.document, schema);
  }

  /**
   * A valid value of `schema`: its example where it has one, else the smallest value its keywords
   * allow. Objects carry only their required properties, or with `complete` every property (and
   * arrays at least one entry), so that each field of a body can be spoiled in turn.
   */
  exampleOf(input: Schema, complete = false): unknown {
    const schema = this.resolve(input);
    if (schema.type === 'object' && schema.properties && complete) {
      return Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => [name, this.exampleOf(property, true)]));
    }
    if (schema.example !== undefined) return schema.example;
    if (schema.enum) return schema.enum[0];
    switch (schema.type) {
      case 'object':
        return Object.fromEntries((schema.required ?? []).map((name) => [name, this.exampleOf(schema.properties?.[name] ?? {})]));
      case 'array': {
        const length = Math.max(schema.minItems ?? 0, complete ? 1 : 0);
        return Array.from({ length }, () => this.exampleOf(schema.items ?? {}, complete));
      }
      case 'string':
        if (schema.format === 'uuid') return randomUUID();
        if (schema.format === 'date-time') return new Date().toISOString();
        return 'x'.repeat(Math.max(schema.minLength ?? 1, 1));
      case 'integer':
      case 'number':
        return schema.minimum ?? 1;
      case 'boolean':
        return true;
      default:
        throw new Error(`route-catalog: cannot make an example of ${JSON.stringify(input)}`);
    }
  }
}

/** A field of a body schema, by the path validation names it with (`location.lat`, `assignments.0.setId`). */
export interface SchemaField {
  path: string;
  schema: Schema;
}

/** Every field of `schema`, nested objects and the first entry of arrays included, in document order. */
export function fieldsOf(catalog: RouteCatalog, input: Schema, path = ''): SchemaField[] {
  const schema = catalog.resolve(input);
  const fields: SchemaField[] = path ? [{ path, schema }] : [];
  const at = (name: string) => (path ? `${path}.${name}` : name);
  if (schema.type === 'object') {
    for (const [name, property] of Object.entries(schema.properties ?? {})) fields.push(...fieldsOf(catalog, property, at(name)));
  }
  if (schema.type === 'array' && schema.items) fields.push(...fieldsOf(catalog, schema.items, at('0')));
  return fields;
}

/**
 * A deep copy of `body` with the field at `path` (as `fieldsOf` names it) set to `value`; missing
 * objects and arrays on the way are created.
 */
export function withField(body: unknown, path: string, value: unknown): unknown {
  const copy = structuredClone(body) as Record<string, unknown>;
  const names = path.split('.');
  let target: Record<string, unknown> = copy;
  names.slice(0, -1).forEach((name, index) => {
    target[name] ??= /^\d+$/.test(names[index + 1]!) ? [] : {};
    target = target[name] as Record<string, unknown>;
  });
  target[names.at(-1)!] = value;
  return copy;
}

function resolveSchema(document: OpenAPIObject, schema: Schema): Schema {
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = document.components?.schemas?.[name] as Schema | undefined;
    if (!target) throw new Error(`route-catalog: no schema ${schema.$ref}`);
    return resolveSchema(document, { ...target, ...withoutKeys(schema, ['$ref']) });
  }
  if (schema.allOf?.length === 1) {
    return resolveSchema(document, { ...resolveSchema(document, schema.allOf[0]!), ...withoutKeys(schema, ['allOf']) });
  }
  return schema;
}

/** Parses `printRoutes({ commonPrefix: false })`: one node per line, four characters of indentation per level. */
export function fastifyRoutes(tree: string): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  const prefixes: string[] = [];
  for (const line of tree.split('\n')) {
    if (line.trim() === '') continue;
    const node = /^((?:│ {3}| {4})*)(?:├── |└── )(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!node) throw new Error(`route-catalog: cannot read the Fastify route tree line ${JSON.stringify(line)}`);
    const depth = node[1]!.length / 4;
    const path = (depth === 0 ? '' : prefixes[depth - 1]!) + node[2]!;
    prefixes.length = depth;
    prefixes.push(path);
    for (const method of node[3]?.split(', ') ?? []) routes.push({ method, path });
  }
  if (routes.length === 0) throw new Error('route-catalog: the Fastify route tree lists no routes');
  return routes;
}

function openApiPath(fastifyPath: string): string {
  return fastifyPath.replace(/:(\w+)/g, '{$1}');
}

function withoutKeys(schema: Schema, keys: (keyof Schema)[]): Schema {
  const copy = { ...schema };
  for (const key of keys) delete copy[key];
  return copy;
}

/** `route.path` with every `:param` replaced from `values` (URI-encoded); throws for a parameter without a value. */
export function fillPath(route: CatalogRoute, values: Record<string, string | undefined>): string {
  return route.path.replace(/:(\w+)/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) {
      throw new Error(
        `${route.key}: no value for path parameter "${name}". A new kind of path id needs a fixture and its 404 code ` +
          'in test/support/account-resources.ts.',
      );
    }
    return encodeURIComponent(value);
  });
}
