import { randomUUID } from 'node:crypto';
import { Catch, type RpcExceptionFilter } from '@nestjs/common';
import { ErrorCode, type ErrorBody } from '@tracking/contracts';
import { DomainError, type Logger } from '@tracking/core';
import { type Observable, throwError } from 'rxjs';

/**
 * Turns whatever a message handler throws into an `ErrorBody` for the reply. Domain errors keep
 * their code; an error `unavailable` recognises (the service's database out of reach) becomes
 * `ServiceUnavailable`, which callers retry; anything else becomes `InternalError`. Both get an id that
 * is logged beside the cause.
 */
@Catch()
export class RpcErrorFilter implements RpcExceptionFilter<unknown> {
  constructor(
    private readonly logger: Logger,
    private readonly unavailable: (error: unknown) => boolean = () => false,
  ) {}

  catch(exception: unknown): Observable<never> {
    if (exception instanceof DomainError) return throwError(() => exception.toBody());
    const id = randomUUID();
    if (this.unavailable(exception)) {
      this.logger.warn({ err: exception, errorId: id }, 'a dependency of the service is unavailable');
      const body: ErrorBody = { id, code: ErrorCode.ServiceUnavailable, message: 'The service cannot reach its database; retry after a short delay.' };
      return throwError(() => body);
    }
    this.logger.error({ err: exception, errorId: id }, 'unhandled error in message handler');
    const body: ErrorBody = { id, code: ErrorCode.InternalError, message: 'The service failed unexpectedly.' };
    return throwError(() => body);
  }
}
