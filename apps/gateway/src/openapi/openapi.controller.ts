import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Get, Injectable, Req, Res } from '@nestjs/common';
import { ApiBadRequestResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ApiController } from '../http/api-controller.js';

export const OPENAPI_DOCUMENT_PATH = '/v1/openapi.json';

/**
 * The document as served, written by `npm run build` (write-openapi.ts) next to the compiled gateway: the
 * same file whether this runs from `src/` (tests) or `dist/`.
 */
export const OPENAPI_FILE = fileURLToPath(new URL('../../dist/openapi.json', import.meta.url));

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

/**
 * The document and its entity tag, read at start-up from the file the build wrote. Building it in the
 * gateway (Nest's Swagger scan of every controller and DTO) left 6 to 11 MB of garbage on the heap that V8
 * had not collected 3 s after the process was ready, about 12 MiB of its resident memory then
 * (BENCHMARKS.md, "Memory"); the document depends on the code only, so the build makes it once.
 */
@Injectable()
export class PublishedOpenApi {
  private published: { body: string; etag: string } | undefined;

  async load(file: string = OPENAPI_FILE): Promise<void> {
    const body = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOENT' ? new Error(`The OpenAPI document ${file} is missing: run npm run build, which writes it.`) : error;
    });
    this.published = { body, etag: `"${createHash('sha256').update(body).digest('base64url')}"` };
  }

  get(): { body: string; etag: string } {
    if (!this.published) throw new Error('The OpenAPI document is loaded at start-up, before the gateway listens.');
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
    description: 'Generated from the code when the gateway is built; no token needed. Interactive reference: GET /docs.',
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
    // A string with a JSON content type leaves as it is: serialised once, by the build.
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
