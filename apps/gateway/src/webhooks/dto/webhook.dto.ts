import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ALL_EVENT_TYPES, DeliveryStatus, EVENT_TYPES, EventType, WebhookStatus } from '@tracking/contracts';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayUnique,
  IsArray,
  IsDefined,
  IsIn,
  IsOptional,
  IsString,
  Length,
  MaxLength,
  ValidateBy,
  type ValidationArguments,
} from 'class-validator';
import { IsOmittable, PageMetadataDto } from '../../http/common.dto.js';
import { IsReadOnly } from '../../http/validation.js';

export const WEBHOOK_URL_MAX_LENGTH = 2000;
const EVENT_TYPE_CHOICES = [ALL_EVENT_TYPES, ...EVENT_TYPES];
const EXAMPLE_URL = 'https://hooks.example.com/tracking';
const EXAMPLE_EVENT_TYPES = [EventType.ShipmentCreated, EventType.ShipmentDelivered];

const URL_DESCRIPTION =
  'Where deliveries are POSTed: https (http only where the service allows insecure URLs), no user name or password. ' +
  'Its host may not be, or resolve to, a loopback, private, link-local, unique-local, carrier-grade NAT, multicast, ' +
  'reserved or cloud metadata address (InvalidParameter, issue ForbiddenAddress), and must resolve (issue UnresolvableHost); ' +
  'checked again at every delivery.';
const EVENT_TYPES_DESCRIPTION = '`["*"]` for every event type, else a list of distinct event types (`*` only alone).';

/**
 * An absolute `http`/`https` URL written without spaces or control characters. Which scheme and which
 * hosts are allowed is the service's SSRF policy, judged after this.
 */
function IsWebhookUrl(): PropertyDecorator {
  return ValidateBy({
    name: 'isWebhookUrl',
    validator: {
      validate: (value: unknown) => {
        // Other types and the empty string are left to IsString and Length.
        if (typeof value !== 'string' || value === '') return true;
        if (/[\s\p{Cc}]/u.test(value)) return false;
        try {
          return ['http:', 'https:'].includes(new URL(value).protocol);
        } catch {
          return false;
        }
      },
      defaultMessage: ({ property }: ValidationArguments) => `${property} must be an absolute https URL`,
    },
  });
}

/** `*` stands for every type, so it may not come with others. */
function IsWildcardAlone(): PropertyDecorator {
  return ValidateBy({
    name: 'isWildcardAlone',
    validator: {
      validate: (value: unknown) => !Array.isArray(value) || !value.includes(ALL_EVENT_TYPES) || value.length === 1,
      defaultMessage: ({ property }: ValidationArguments) => `${property} must be ["*"] alone or a list of event types without "*"`,
    },
  });
}

/** The rules of `eventTypes`, on create (required) and patch (omittable). */
function EventTypeRules(): PropertyDecorator {
  return (target, key) => {
    IsArray()(target, key);
    ArrayMinSize(1)(target, key);
    ArrayMaxSize(EVENT_TYPES.length)(target, key);
    IsString({ each: true })(target, key);
    IsIn(EVENT_TYPE_CHOICES, { each: true, message: 'eventTypes must hold "*" or known event types only' })(target, key);
    ArrayUnique()(target, key);
    IsWildcardAlone()(target, key);
  };
}

const EVENT_TYPES_SCHEMA = {
  type: 'array' as const,
  items: { type: 'string' as const, enum: EVENT_TYPE_CHOICES },
  minItems: 1,
  maxItems: EVENT_TYPES.length,
  uniqueItems: true,
  example: EXAMPLE_EVENT_TYPES,
  description: EVENT_TYPES_DESCRIPTION,
};

export class WebhookDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-6b1c-7d2e-8f3a-4b5c6d7e8f90' }) id: string;
  @ApiProperty({ format: 'uri', maxLength: WEBHOOK_URL_MAX_LENGTH, example: EXAMPLE_URL }) url: string;
  @ApiProperty({ type: String, nullable: true, maxLength: 2000, example: 'Shipment updates for the ERP' }) description: string | null;
  @ApiProperty(EVENT_TYPES_SCHEMA) eventTypes: string[];
  @ApiProperty({ enum: WebhookStatus, enumName: 'WebhookStatus', example: WebhookStatus.Active }) status: WebhookStatus;
  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'Why it was Disabled (every delivery failed for 5 days); null while Active.',
  })
  disabledReason: string | null;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) updatedAt: string;
}

export class WebhookWithSecretDto extends WebhookDto {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8KNPl4aTAGM=',
    pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
    description:
      'The signing secret: `whsec_` + base64 of 32 random bytes. Shown only in this answer (create and rotate-secret): keep it.',
  })
  secret: string;
}

export class WebhookPageDto {
  @ApiProperty({ type: [WebhookDto] }) items: WebhookDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class CreateWebhookDto {
  @ApiProperty({ format: 'uri', minLength: 1, maxLength: WEBHOOK_URL_MAX_LENGTH, example: EXAMPLE_URL, description: URL_DESCRIPTION })
  @IsDefined()
  @IsString()
  @Length(1, WEBHOOK_URL_MAX_LENGTH)
  @IsWebhookUrl()
  url: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 2000, example: 'Shipment updates for the ERP', description: 'Left out: null.' })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string | null;

  @ApiProperty(EVENT_TYPES_SCHEMA)
  @IsDefined()
  @EventTypeRules()
  eventTypes: string[];

  @IsReadOnly() secret?: never;
  @IsReadOnly() disabledReason?: never;
}

/** Any subset of the fields; `description` may be set to null, the others may not. */
export class UpdateWebhookDto {
  @ApiPropertyOptional({ format: 'uri', minLength: 1, maxLength: WEBHOOK_URL_MAX_LENGTH, example: EXAMPLE_URL, description: URL_DESCRIPTION })
  @IsOmittable()
  @IsString()
  @Length(1, WEBHOOK_URL_MAX_LENGTH)
  @IsWebhookUrl()
  url?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 2000, example: null })
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  description?: string | null;

  @ApiPropertyOptional(EVENT_TYPES_SCHEMA)
  @IsOmittable()
  @EventTypeRules()
  eventTypes?: string[];

  @IsReadOnly() secret?: never;
  @IsReadOnly() disabledReason?: never;
}

export class DeliveryAttemptDto {
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:05.000Z', description: 'When the attempt started.' }) at: string;
  @ApiProperty({ type: 'integer', nullable: true, example: 503, description: "The receiver's HTTP status; null when none came (timeout, refused connection)." })
  statusCode: number | null;
  @ApiProperty({ type: 'integer', minimum: 0, example: 182 }) durationMs: number;
  @ApiProperty({ type: String, nullable: true, example: 'HTTP 503', description: 'Why it failed; null on success.' }) error: string | null;
}

export class DeliveryDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-8c2d-7e3f-9a4b-5c6d7e8f9a0b' }) id: string;
  @ApiProperty({ format: 'uuid', example: '0190a4a0-8c2d-7e3f-9a4b-5c6d7e8f9a0c', description: 'The event id: the `webhook-id` header of every attempt.' })
  eventId: string;
  @ApiProperty({ enum: EventType, enumName: 'EventType', example: EventType.ShipmentCreated }) eventType: EventType;
  @ApiProperty({ enum: DeliveryStatus, enumName: 'DeliveryStatus', example: DeliveryStatus.Pending }) status: DeliveryStatus;
  @ApiProperty({ type: [DeliveryAttemptDto], maxItems: 20, description: 'The last 20 attempts at most, oldest first.' }) attempts: DeliveryAttemptDto[];
  @ApiProperty({ type: 'integer', minimum: 0, example: 3, description: 'Every attempt ever made (redeliveries included), also those `attempts` no longer holds.' })
  attemptsTotal: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2025-11-22T08:30:05.000Z', description: 'When the next attempt is due; null once Succeeded or Failed.' })
  nextAttemptAt: string | null;
}

export class DeliveryPageDto {
  @ApiProperty({ type: [DeliveryDto] }) items: DeliveryDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}
