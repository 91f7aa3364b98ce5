import { randomUUID } from 'node:crypto';
import { Catch, type RpcExceptionFilter } from '@nestjs/common';
import { ErrorCode, type ErrorBody } from '@tracking/contracts';
import { DomainError, type Logger } from '@tracking/core';
import { type Observable, throwError } from 'rxjs';

/**
 * Turns whatever a message handler throws into an `ErrorBody` for the reply. Domain errors keep
 * their code; anything else becomes `InternalError` with an id that is logged beside the cause.
 */
@Catch()
export class RpcErrorFilter implements RpcExceptionFilter<unknown> {
  constructor(private readonly logger: Logger) {}

  catch(exception: unknown): Observable<never> {
    if (exception instanceof DomainError) return throwError(() => exception.toBody());
    const id = randomUUID();
    this.logger.error({ err: exception, errorId: id }, 'unhandled error in message handler');
    const body: ErrorBody = { id, code: ErrorCode.InternalError, message: 'The service failed unexpectedly.' };
    return throwError(() => body);
  }
}
