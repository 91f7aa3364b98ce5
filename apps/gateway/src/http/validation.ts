import { type ArgumentMetadata, ValidationPipe, type ValidationError } from '@nestjs/common';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, ValidateBy, ValidateIf, validateSync } from 'class-validator';
import { PageQuery } from '../paging/page-query.js';
import { StrictQuery } from './strict-query.js';
import { QUERY_RULE_ISSUES } from '../paging/query-rules.js';
import { checkBodyHygiene, echo, isStorableText } from '@tracking/readings';
import { DATE_TIME_RANGE_RULE } from './date-time.validator.js';
import { METADATA_SIZE_RULE } from './metadata.validator.js';

/** Fields that the API sets itself; a client sending one gets `ReadOnly` rather than `UnknownField`. */
const READ_ONLY_FIELDS: ReadonlySet<string> = new Set([
  'id',
  'status',
  'createdAt',
  'updatedAt',
  'departedAt',
  'deliveredAt',
  'completedAt',
  'cancelledAt',
  'shipmentId',
  'setId',
  'deviceIds',
  'retiredAt',
  'lastSeenAt',
  'excursions',
  'lastPosition',
  'eta',
  'progress',
  'url',
]);

const READ_ONLY_RULE = 'isReadOnly';

/**
 * A field this request cannot set although others can (`serialNumber` on PATCH): sending it, even as
 * null, is `ReadOnly` rather than the `UnknownField` of an undeclared field. Leave it out of OpenAPI.
 */
export function IsReadOnly(): PropertyDecorator {
  return (target, propertyKey) => {
    ValidateIf((_object: object, value: unknown) => value !== undefined)(target, propertyKey);
    ValidateBy({ name: READ_ONLY_RULE, validator: { validate: () => false } })(target, propertyKey);
  };
}

const RANGE_CONSTRAINTS: ReadonlySet<string> = new Set([
  'isLength',
  'minLength',
  'maxLength',
  'min',
  'max',
  'arrayMinSize',
  'arrayMaxSize',
  'arrayNotEmpty',
  'isNotEmpty',
  'minDate',
  'maxDate',
  METADATA_SIZE_RULE,
  DATE_TIME_RANGE_RULE,
]);

/** The first failed rule of a body as `InvalidParameter` with `details.field` and `details.issue`. */
export function toInvalidParameter(errors: ValidationError[], parentPath = ''): DomainError {
  const error = errors[0];
  if (!error) return DomainError.invalidParameter('body', ParameterIssue.InvalidFormat, 'The request body is not valid.');
  // The property is the client's own key when it is unknown: repeated cut (`echo`), not whole.
  const field = parentPath ? `${parentPath}.${echo(error.property)}` : echo(error.property);
  if (error.children?.length && !error.constraints) return toInvalidParameter(error.children, field);
  const constraints = error.constraints ?? {};
  if ('whitelistValidation' in constraints || READ_ONLY_RULE in constraints) {
    const readOnly = READ_ONLY_RULE in constraints || READ_ONLY_FIELDS.has(error.property);
    return DomainError.invalidParameter(
      field,
      readOnly ? ParameterIssue.ReadOnly : ParameterIssue.UnknownField,
      readOnly ? `${field} is set by the API and cannot be sent.` : `${field} is not a field of this request.`,
    );
  }
  if (error.value === undefined) {
    return DomainError.invalidParameter(field, ParameterIssue.Required, `${field} is required.`);
  }
  // A wrong type is reported before a wrong size: "must be a string" says more than "1 to 200 characters".
  const rules = Object.keys(constraints);
  const rule = rules.find((name) => !RANGE_CONSTRAINTS.has(name)) ?? rules[0] ?? '';
  const issue = QUERY_RULE_ISSUES.get(rule) ?? (RANGE_CONSTRAINTS.has(rule) ? ParameterIssue.OutOfRange : ParameterIssue.InvalidFormat);
  return DomainError.invalidParameter(field, issue, `${constraints[rule] ?? `${field} is not valid`}.`);
}

/**
 * The `ArrayMaxSize` rules of a body's own fields, checked before any other rule: class-validator
 * would first run every rule over every element, and `ArrayUnique` compares each element with all
 * the others (100000 distinct tags, well within 1 MiB, took 13 s).
 */
function checkArraySizes(body: Record<string, unknown>, metatype: NonNullable<ArgumentMetadata['metatype']>): void {
  for (const rule of getMetadataStorage().getTargetValidationMetadatas(metatype, '', true, false)) {
    if (rule.name !== 'arrayMaxSize') continue;
    const value = body[rule.propertyName];
    const max = Number(rule.constraints[0]);
    if (Array.isArray(value) && value.length > max) {
      const field = rule.propertyName;
      throw DomainError.invalidParameter(field, ParameterIssue.OutOfRange, `${field} must contain no more than ${max} elements.`);
    }
  }
}

const ruled = new WeakMap<object, Set<string>>();

/**
 * The properties a DTO class declares rules for, its inherited ones included; looked up once per class
 * (class-validator filters every rule it knows at each call: 1.4 % of the gateway's busy time on list
 * shipments when it ran per request).
 */
function ruledProperties(dto: NonNullable<ArgumentMetadata['metatype']>): Set<string> {
  let properties = ruled.get(dto);
  if (properties === undefined) {
    properties = new Set(getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false).map((rule) => rule.propertyName));
    ruled.set(dto, properties);
  }
  return properties;
}

const PAGE_PARAMETERS = ruledProperties(PageQuery);

/**
 * What a query DTO's class-validator pass cannot say in the API's order (docs/api.md, "Paging"): the
 * parameters are judged in the order the URL gives them, a repeated one (InvalidFormat), one the
 * collection does not know (UnknownField), a paging parameter against its rules, a filter holding text
 * PostgreSQL cannot compare (a NUL, an unpaired surrogate: InvalidFormat); the filters' own rules come
 * after, in the order the class declares them.
 */
function checkQueryParameters(query: Record<string, unknown>, dto: NonNullable<ArgumentMetadata['metatype']>): void {
  const known = ruledProperties(dto);
  for (const [name, value] of Object.entries(query)) checkQueryParameter(name, value, known);
}

/**
 * Whether the query passes every check of `checkQueryParameters` but the paging parameters' rules, which
 * the class-validator pass of the whole DTO applies as well (the same decorators, inherited): when it
 * does and that pass accepts the query, `checkQueryParameters` would have accepted it too, so it need
 * not run a class-validator pass per paging parameter first. Speed machinery (docs/architecture.md):
 * those passes were 3 % of the gateway's busy time on list shipments (`?limit=50`).
 */
function plainQuery(query: Record<string, unknown>, dto: NonNullable<ArgumentMetadata['metatype']>): boolean {
  const known = ruledProperties(dto);
  for (const [name, value] of Object.entries(query)) {
    if (typeof value !== 'string' || !known.has(name)) return false;
    if (!PAGE_PARAMETERS.has(name) && !isStorableText(value)) return false;
  }
  return true;
}

function checkQueryParameter(name: string, value: unknown, known: Set<string>): void {
  if (typeof value !== 'string') {
    throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, `${name} must be given once.`);
  }
  if (!known.has(name)) {
    throw DomainError.invalidParameter(name, ParameterIssue.UnknownField, `${name} is not a parameter of this collection.`);
  }
  if (PAGE_PARAMETERS.has(name)) {
    const errors = validateSync(plainToInstance(PageQuery, { [name]: value }) as object);
    if (errors.length > 0) throw toInvalidParameter(errors);
  } else if (!isStorableText(value)) {
    const message = `${name} contains a NUL character or an unpaired UTF-16 surrogate.`;
    throw DomainError.invalidParameter(name, ParameterIssue.InvalidFormat, message);
  }
}

/**
 * The declared type of a `@Body()` that its handler judges piece by piece, where one bad piece is that
 * piece's refusal rather than a 400 for the request (`POST /readings`: a bad entry is rejected, the batch
 * goes on). The pipe passes such a body as parsed (its depth already bounded by the JSON parser); the
 * handler checks the envelope and runs `checkBodyHygiene` on each piece itself.
 */
export abstract class PieceWiseBody {}

/**
 * Validates bodies and list queries against their DTO class: unknown and read-only fields are errors,
 * never dropped.
 * Hostile JSON (too deep, prototype keys, unstorable text) and oversized arrays are refused first,
 * before class-transformer copies the body or a validator walks it.
 */
class BodyValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (metadata.type === 'body' && metadata.metatype === PieceWiseBody) return value;
    if (metadata.type === 'body') {
      const dto = metadata.metatype === Object ? undefined : metadata.metatype;
      if (dto && (typeof value !== 'object' || value === null || Array.isArray(value))) {
        throw new DomainError(ErrorCode.MalformedRequest, 'The request body must be a JSON object.');
      }
      checkBodyHygiene(value);
      if (dto) checkArraySizes(value as Record<string, unknown>, dto);
    }
    const query = metadata.metatype;
    if (metadata.type === 'query' && query && query.prototype instanceof StrictQuery) {
      const parameters = value as Record<string, unknown>;
      if (plainQuery(parameters, query)) {
        try {
          return await super.transform(value, metadata);
        } catch {
          // Refused: the checks below, in the URL's order, name the first fault as they always did.
        }
      }
      checkQueryParameters(parameters, query);
    }
    return super.transform(value, metadata);
  }
}

export function createValidationPipe(): ValidationPipe {
  return new BodyValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    validationError: { target: false, value: true },
    exceptionFactory: (errors) => toInvalidParameter(errors),
  });
}
