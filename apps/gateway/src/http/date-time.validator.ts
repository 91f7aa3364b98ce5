import { DATE_TIME_MAX, DATE_TIME_MIN, parseDateTime } from '@tracking/core';
import { ValidateBy, type ValidationArguments, type ValidationOptions } from 'class-validator';

/** Listed among the range rules of validation.ts, so its failures are `OutOfRange`. */
export const DATE_TIME_RANGE_RULE = 'dateTimeRange';

/** How a date-time a client sends is read and answered, for the API reference. */
export const DATE_TIME_INPUT_DESCRIPTION =
  'RFC 3339 date-time with a time zone (`Z` or an offset such as `+01:00`), years 0001 to 9999 in UTC; ' +
  'answered in UTC with milliseconds, digits below the millisecond dropped.';

/**
 * An RFC 3339 date-time with a time zone, such as `2026-12-01T08:00:00Z` or `2026-12-01T09:00:00+01:00`
 * (anything else, a date alone, a local time, `2026-02-30`, is InvalidFormat), naming an instant in the
 * years 0001 to 9999 UTC (else OutOfRange). Combine with an optionality rule for optional fields.
 */
export function IsDateTime(validationOptions?: ValidationOptions): PropertyDecorator {
  const format = ValidateBy(
    {
      name: 'isDateTime',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && parseDateTime(value) !== undefined,
        defaultMessage: ({ property }: ValidationArguments) =>
          `${property} must be an RFC 3339 date-time with a time zone, such as 2026-12-01T08:00:00Z`,
      },
    },
    validationOptions,
  );
  const range = ValidateBy(
    {
      name: DATE_TIME_RANGE_RULE,
      validator: {
        // A value of the wrong format is the other rule's to report.
        validate: (value: unknown) => {
          const instant = typeof value === 'string' ? parseDateTime(value)?.getTime() : undefined;
          return instant === undefined || (instant >= DATE_TIME_MIN && instant <= DATE_TIME_MAX);
        },
        defaultMessage: ({ property }: ValidationArguments) => `${property} must lie in the years 0001 to 9999 UTC`,
      },
    },
    validationOptions,
  );
  return (target, propertyKey) => {
    format(target, propertyKey);
    range(target, propertyKey);
  };
}
