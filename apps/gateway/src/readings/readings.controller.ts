import { Body, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBadRequestResponse, ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import {
  type AccountScope,
  ErrorCode,
  type IngestEntry,
  type IngestResult,
  MAX_READINGS_PER_BATCH,
  type ReadingPage,
  Subjects,
} from '@tracking/contracts';
import { judgeEntries, readingsOf } from '@tracking/readings';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Requires } from '../accounts/account-access.guard.js';
import { AccountController } from '../accounts/account-route.decorator.js';
import { Scope } from '../accounts/account-scope.decorator.js';
import { BULK_BODY_LIMIT_BYTES } from '../config.js';
import { ApiAccountErrors, ApiNotFound } from '../http/api-responses.js';
import { ErrorEnvelopeDto } from '../http/common.dto.js';
import { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { PieceWiseBody } from '../http/validation.js';
import { Permission } from '../identity/roles.js';
import { IngestAdmission } from '../protection/ingest-admission/ingest-admission.js';
import { RateLimitHooks } from '../protection/rate-limit/rate-limit.hooks.js';
import { ServiceClient } from '../rpc/rpc.module.js';
import { IngestReadingsDto, IngestResultDto, ReadingPageDto } from './dto/reading.dto.js';
import { ListReadingsQuery } from './readings.query.js';

const DeviceIdPipe = new ResourceIdPipe(ErrorCode.DeviceNotExists, 'Device');

/** The share of max_payload a chunk's entries may fill; the rest is the envelope and headers. */
const PAYLOAD_SHARE = 0.75;
/** An upper bound of an entry's JSON without its serial number: 12 numbers of at most 24 characters, a UUID, keys. */
const ENTRY_BYTES = 450;

/** Sending readings and reading them back (docs/readings.md). */
@ApiTags('Readings')
@AccountController('')
@ApiAccountErrors()
export class ReadingsController {
  constructor(
    private readonly services: ServiceClient,
    private readonly rateLimits: RateLimitHooks,
    private readonly admission: IngestAdmission,
  ) {}

  @Post('readings')
  @HttpCode(200)
  @RouteConfig({ bodyLimit: BULK_BODY_LIMIT_BYTES })
  @Requires(Permission.Ingest)
  @ApiOperation({
    summary: `Send up to ${MAX_READINGS_PER_BATCH} readings of the account's devices`,
    description:
      'Each entry is judged on its own: a refused entry is listed in `rejected` with its index and error, the others are ' +
      'stored. 200 means every accepted reading is committed. A reading is keyed by its device and recordedAt: the same key ' +
      'with the same content again is a duplicate (stored once), so a batch can be resent after a timeout; the same key with ' +
      'other content is refused (ConflictingReading). A reading reaches a shipment (its track, visits and alerts) only when ' +
      'it was recorded while its device was assigned to it: each assignment is kept as a period from the assignment to the ' +
      'release, matched on recordedAt. `unassigned` counts the accepted readings that fell in no period. Allowed to Admin, ' +
      "Operator and Ingest. Bodies up to 4 MiB. The batch is one request for the application's rate limit and its entries " +
      "count against the tenant's readings limit. Tenants share " +
      'the ingest fairly: a batch of a tenant with more readings being stored than its share waits, briefly, then gets 429.',
  })
  @ApiBody({ type: IngestReadingsDto })
  @ApiOkResponse({
    type: IngestResultDto,
    description: 'Counts of accepted and duplicate entries, of accepted readings that reached no shipment (unassigned), and the refused ones.',
  })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description:
      'Only for the envelope, nothing is stored: MalformedRequest (not a JSON object); InvalidParameter on readings (Required, ' +
      `InvalidFormat when not an array, OutOfRange outside 1..${MAX_READINGS_PER_BATCH} entries) or another top-level field ` +
      '(UnknownField); accountId: AccountNotFound.',
  })
  @ApiTooManyRequestsResponse({
    type: ErrorEnvelopeDto,
    description:
      'RateLimitExceeded with Retry-After, the whole batch refused and nothing stored: details.policy readings or application ' +
      "(rate limits), or ingest-admission: the tenant already has its share of readings being stored on this gateway and this " +
      'batch found its queue full or waited too long (INGEST_QUEUE_TIMEOUT_MS, 2 s by default).',
  })
  async ingest(
    @Scope() scope: AccountScope,
    // Not through the validation pipe's checks, which would fail the whole batch for one bad entry:
    // `readingsOf` judges the envelope, `judgeEntries` each entry on its own.
    @Body() body: PieceWiseBody,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<IngestResult> {
    const list = readingsOf(body);
    // Admitted first (fair between tenants, weighted by readings: docs/readings.md "Fair admission"), then
    // charged: a batch the admission refuses costs none of the tenant's readings limit.
    return this.admission.run(scope.tenantId, list.length, reply, async () => {
      await this.rateLimits.chargeReadings(request, reply, scope.tenantId, list.length);
      return this.store(scope, list, request);
    });
  }

  /** Judges the entries and stores the usable ones, chunk by chunk. */
  private async store(scope: AccountScope, list: unknown[], request: FastifyRequest): Promise<IngestResult> {
    const { entries, rejected } = judgeEntries(list);
    const result: IngestResult = { accepted: 0, duplicates: 0, unassigned: 0, rejected };
    // One chunk after the other: each is one DMS transaction, idempotent on its own (a retried batch
    // finds its stored chunks' readings as duplicates).
    for (const chunk of this.chunks(entries)) {
      const answer = await this.services.call(Subjects.dms.readings.ingest, { ...scope, entries: chunk }, request);
      result.accepted += answer.accepted;
      result.duplicates += answer.duplicates;
      result.unassigned += answer.unassigned;
      result.rejected.push(...answer.rejected);
    }
    result.rejected.sort((a, b) => a.index - b.index);
    return result;
  }

  @Get('devices/:deviceId/readings')
  @ApiOperation({
    summary: "A device's readings in the order they were stored, with cursor paging; from/to filter recordedAt (half-open)",
    description: 'Paging by storage order: a client paging to the end sees every reading once, also while readings keep arriving.',
  })
  @ApiParam({ name: 'deviceId', format: 'uuid' })
  @ApiOkResponse({ type: ReadingPageDto, description: 'The readings under `readings`, next to `metadata`.' })
  @ApiBadRequestResponse({
    type: ErrorEnvelopeDto,
    description:
      'InvalidParameter: limit or includeTotal (InvalidFormat, OutOfRange), cursor (InvalidCursor, also for a cursor of other ' +
      'filters), from or to (InvalidFormat; to before from: OutOfRange), any other parameter (UnknownField); accountId: AccountNotFound.',
  })
  @ApiNotFound("DeviceNotExists: unknown id, not a UUID, or another account's device.")
  list(
    @Scope() scope: AccountScope,
    @Param('deviceId', DeviceIdPipe) deviceId: string,
    @Query() query: ListReadingsQuery,
    @Req() request: FastifyRequest,
  ): Promise<ReadingPage> {
    return this.services.call(Subjects.dms.readings.list, { ...scope, deviceId, page: query.pageRequest(), filters: query.filters() }, request);
  }

  /**
   * The entries in chunks whose messages stay under the NATS server's max_payload (1 MiB by default,
   * while a batch may be 4 MiB): usually one chunk, as a 1000-reading batch is about 300 KiB.
   */
  private chunks(entries: IngestEntry[]): IngestEntry[][] {
    const budget = this.services.maxPayload() * PAYLOAD_SHARE;
    const chunks: IngestEntry[][] = [];
    let chunk: IngestEntry[] = [];
    let size = 0;
    for (const entry of entries) {
      const bytes = ENTRY_BYTES + (entry.serialNumber === undefined ? 0 : Buffer.byteLength(JSON.stringify(entry.serialNumber)));
      if (chunk.length > 0 && size + bytes > budget) {
        chunks.push(chunk);
        chunk = [];
        size = 0;
      }
      chunk.push(entry);
      size += bytes;
    }
    if (chunk.length > 0) chunks.push(chunk);
    return chunks;
  }
}
