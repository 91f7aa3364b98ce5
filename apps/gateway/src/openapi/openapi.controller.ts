import { createHash } from 'node:crypto';
import { Get, Injectable, Req, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiResponse, ApiTags, type OpenAPIObject } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ApiController } from '../http/api-controller.js';

export const OPENAPI_DOCUMENT_PATH = '/v1/openapi.json';

/** It changes only with a release; five minutes keeps a rolling deployment's mix of versions short. */
const CACHE_CONTROL = 'public, max-age=300';

const CACHE_HEADERS = {
  'Cache-Control': { description: 'Cacheable by anyone for five minutes.', schema: { type: 'string' }, example: CACHE_CONTROL },
  ETag: {
    description: "The document's entity tag: it changes whenever the document does. Send it in If-None-Match to revalidate a copy.",
    schema: { type: 'string' },
    example: '"v1w8nTtH1v3Pq0s9-2bM5d3bW3Yc0y8k1aE4s7PZQ2g"',
  },
};

/** The document, built once when the gateway starts (`setupOpenApi`), and its entity tag. */
@Injectable()
export class PublishedOpenApi {
  private published: { body: string; etag: string } | undefined;

  publish(document: OpenAPIObject): void {
    const body = JSON.stringify(document);
    this.published = { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
  }

  get(): { body: string; etag: string } {
    if (!this.published) throw new Error('The OpenAPI document is published at start-up, before the gateway listens.');
    return this.published;
  }
}

@ApiTags('Documentation')
@ApiController('v1')
export class OpenApiController {
  constructor(private readonly published: PublishedOpenApi) {}

  @Get('openapi.json')
  @ApiOperation({
    summary: 'This OpenAPI 3.1 document',
    description: 'Generated from the code when the gateway starts; no token needed. Interactive reference: GET /docs.',
  })
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'The ETag of a copy you hold: 304 while it is still current.' })
  @ApiOkResponse({ description: 'The document.', schema: { type: 'object', description: 'An OpenAPI 3.1 document.' }, headers: CACHE_HEADERS })
  @ApiResponse({ status: 304, description: 'Not Modified: the copy named in If-None-Match is current.', headers: CACHE_HEADERS })
  @ApiBadRequestResponse({ type: ErrorEnvelopeDto, description: 'InvalidParameter: any query parameter (UnknownField).' })
  document(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): string | undefined {
    const { body, etag } = this.published.get();
    reply.header('Cache-Control', CACHE_CONTROL).header('ETag', etag);
    if (namesCurrentCopy(request.headers['if-none-match'], etag)) {
      reply.status(304);
      return undefined;
    }
    // A string with a JSON content type leaves as it is: serialised once, at start-up.
    reply.header('Content-Type', 'application/json; charset=utf-8');
    return body;
  }
}

/** If-None-Match (RFC 9110 13.1.2): a list of entity tags compared weakly, or `*`. */
function namesCurrentCopy(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}
