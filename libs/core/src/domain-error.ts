import { ErrorCode, type ErrorBody, type ErrorDetails, ParameterIssue } from '@tracking/contracts';

/** An expected failure with a public error code; services throw it and the gateway maps its status. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetails,
    /** Set on 5xx errors: the id under which the cause was logged. */
    readonly id?: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.message };
    if (this.id !== undefined) body.id = this.id;
    if (this.details !== undefined) body.details = this.details;
    return body;
  }

  static invalidParameter(field: string, issue: ParameterIssue, message: string): DomainError {
    return new DomainError(ErrorCode.InvalidParameter, message, { field, issue });
  }
}
