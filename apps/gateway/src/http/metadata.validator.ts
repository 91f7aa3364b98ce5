import { ValidateBy, type ValidationArguments, type ValidationOptions } from 'class-validator';

/** docs/api.md, "Input rules": `metadata` holds at most 50 keys and 8 KiB of JSON. */
export const METADATA_MAX_KEYS = 50;
export const METADATA_MAX_BYTES = 8 * 1024;

/** Listed among the range rules of validation.ts, so its failures are `OutOfRange`. */
export const METADATA_SIZE_RULE = 'maxMetadataSize';
const SIZE_RULE = METADATA_SIZE_RULE;
const SHAPE_RULE = 'isMetadata';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A JSON scalar we can store and give back unchanged; JSON carries no NaN or Infinity, nor do we. */
function isMetadataValue(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

function hasMetadataShape(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && Object.values(value).every(isMetadataValue);
}

function serialisedBytes(value: Record<string, unknown>): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/**
 * A free-form `metadata` object: a JSON object whose values are strings, finite numbers or booleans
 * (anything else is InvalidFormat), with at most 50 keys and at most 8 KiB serialised as JSON
 * (OutOfRange). Combine with an optionality rule such as `ValidateIf` for optional fields.
 */
export function IsMetadata(validationOptions?: ValidationOptions): PropertyDecorator {
  const shape = ValidateBy(
    {
      name: SHAPE_RULE,
      validator: {
        validate: hasMetadataShape,
        defaultMessage: ({ property, value }: ValidationArguments) =>
          isPlainObject(value)
            ? `every value of ${property} must be a string, a finite number or a boolean`
            : `${property} must be a JSON object`,
      },
    },
    validationOptions,
  );
  const size = ValidateBy(
    {
      name: SIZE_RULE,
      validator: {
        // A value of the wrong shape is the other rule's to report (and may not even serialise).
        validate: (value: unknown) =>
          !hasMetadataShape(value) || (Object.keys(value).length <= METADATA_MAX_KEYS && serialisedBytes(value) <= METADATA_MAX_BYTES),
        defaultMessage: ({ property }: ValidationArguments) =>
          `${property} may hold at most ${METADATA_MAX_KEYS} keys and ${METADATA_MAX_BYTES} bytes of JSON`,
      },
    },
    validationOptions,
  );
  return (target, propertyKey) => {
    shape(target, propertyKey);
    size(target, propertyKey);
  };
}
