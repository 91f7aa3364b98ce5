import { Injectable } from '@nestjs/common';
import {
  type AuthenticateDeviceRequest,
  type AuthenticatedDevice,
  CREDENTIAL_IDENTIFIER_PATTERN,
  CredentialProtocol,
  type CreateCredentialRequest,
  type DeleteCredentialRequest,
  type DeviceCredential,
  type DeviceCredentialPage,
  type DeviceCredentialWithSecret,
  ErrorCode,
  IMEI_PATTERN,
  type ListCredentialsRequest,
  type LiveCredentialsReply,
  type LiveCredentialsRequest,
  MAX_CREDENTIALS_PER_DEVICE,
  ParameterIssue,
} from '@tracking/contracts';
import { DomainError, toDateTime } from '@tracking/core';
import { uniqueViolation } from '@tracking/database';
import { validate as isUuid, v7 as uuidv7 } from 'uuid';
import { deviceNotFound } from '../devices/device-rules.js';
import type { CredentialEntity } from './credential.entity.js';
import { CredentialRepository, type CredentialOwner } from './credential.repository.js';
import { newDeviceSecret, secretDigest, secretMatches } from './credential-secret.js';

const PROTOCOLS: ReadonlySet<string> = new Set(Object.values(CredentialProtocol));
/** The most credential ids one liveness question may carry (the device gateway asks in chunks). */
export const MAX_LIVENESS_IDS = 10_000;

/** Device credentials (docs/device-gateway.md, "Credentials"): managed through the gateway, used by the device gateway. */
@Injectable()
export class CredentialsService {
  constructor(private readonly credentials: CredentialRepository) {}

  async create(request: CreateCredentialRequest): Promise<DeviceCredentialWithSecret> {
    const protocol = request.credential.protocol;
    const identifier = identifierOf(protocol, request.credential.identifier, request.deviceId);
    if (!isUuid(request.deviceId)) throw deviceNotFound(request.deviceId);
    const secret = protocol === CredentialProtocol.Teltonika ? null : newDeviceSecret();
    const entity: Omit<CredentialEntity, 'seq'> = {
      id: uuidv7(),
      tenantId: request.tenantId,
      accountId: request.accountId,
      deviceId: request.deviceId,
      protocol,
      identifier,
      secretDigest: secret === null ? null : secretDigest(secret),
      createdAt: new Date(),
      lastUsedAt: null,
    };
    try {
      await this.credentials.withDeviceCredentials(request, request.deviceId, async (owner, manager) => {
        checkOwner(owner, request.deviceId);
        if ((await this.credentials.countOf(manager, request.deviceId)) >= MAX_CREDENTIALS_PER_DEVICE) {
          throw new DomainError(
            ErrorCode.CredentialLimitReached,
            `The device has ${MAX_CREDENTIALS_PER_DEVICE} credentials, the most it may have; delete one first.`,
          );
        }
        const holder = await this.credentials.identifierHolder(manager, protocol, identifier);
        // Another device's identifier, or a second credential of one IMEI: the answer never says whose.
        if (holder !== null && (holder !== request.deviceId || protocol === CredentialProtocol.Teltonika)) throw duplicateIdentifier();
        await this.credentials.insert(manager, entity);
      });
    } catch (error) {
      if (uniqueViolation(error) === 'device_credentials_imei_key') throw duplicateIdentifier();
      throw error;
    }
    const created: DeviceCredentialWithSecret = toCredential(entity);
    if (secret !== null) created.secret = secret;
    return created;
  }

  async list(request: ListCredentialsRequest): Promise<DeviceCredentialPage> {
    if (!isUuid(request.deviceId)) throw deviceNotFound(request.deviceId);
    await this.credentials.withDeviceCredentials(request, request.deviceId, async (owner) => checkOwner(owner, request.deviceId, true));
    const { rows, metadata } = await this.credentials.findPage(request.deviceId, request, request.page);
    return { credentials: rows.map(toCredential), metadata };
  }

  async delete(request: DeleteCredentialRequest): Promise<void> {
    if (!isUuid(request.deviceId)) throw deviceNotFound(request.deviceId);
    await this.credentials.withDeviceCredentials(request, request.deviceId, async (owner, manager) => {
      checkOwner(owner, request.deviceId, true);
      if (!isUuid(request.credentialId) || !(await this.credentials.delete(manager, request.deviceId, request.credentialId))) {
        throw new DomainError(ErrorCode.CredentialNotExists, `Credential ${request.credentialId} does not exist for this device.`);
      }
    });
  }

  /**
   * The live credential with this identifier whose secret matches (Teltonika: the IMEI alone), or null.
   * For `Http` the secret alone names the credential (a request may carry nothing else) and `identifier`
   * is not looked at: the device gateway compares it with the one found (403 on a mismatch). Every
   * candidate's digest is compared in constant time; a use is recorded at most once a minute.
   */
  async authenticate(request: AuthenticateDeviceRequest): Promise<AuthenticatedDevice | null> {
    const { protocol, identifier, secret } = request;
    if (!PROTOCOLS.has(protocol) || typeof identifier !== 'string' || identifier.length > 64) return null;
    if (protocol === CredentialProtocol.Teltonika ? secret !== null : typeof secret !== 'string' || secret.length > 256) return null;
    if (protocol !== CredentialProtocol.Http && identifier.length === 0) return null;
    const candidates = await this.credentials.findLive(
      protocol,
      protocol === CredentialProtocol.Http && secret !== null ? { digest: secretDigest(secret) } : { identifier },
    );
    const match = candidates.find((candidate) =>
      candidate.secretDigest === null ? secret === null : secret !== null && secretMatches(secret, candidate.secretDigest),
    );
    if (!match) return null;
    await this.credentials.touch([match.id]);
    return {
      credentialId: match.id,
      deviceId: match.deviceId,
      tenantId: match.tenantId,
      accountId: match.accountId,
      protocol,
      identifier: match.identifier,
    };
  }

  async live(request: LiveCredentialsRequest): Promise<LiveCredentialsReply> {
    const ids = Array.isArray(request.credentialIds) ? request.credentialIds : [];
    if (ids.length > MAX_LIVENESS_IDS) {
      throw DomainError.invalidParameter('credentialIds', ParameterIssue.OutOfRange, `At most ${MAX_LIVENESS_IDS} credential ids per question.`);
    }
    const live = await this.credentials.liveAmong(ids.filter((id) => typeof id === 'string' && isUuid(id)).map((id) => id.toLowerCase()));
    return { live: [...live] };
  }
}

/** The identifier a new credential gets: the one given (checked per protocol), else the device's id. */
function identifierOf(protocol: CredentialProtocol, given: string | undefined, deviceId: string): string {
  if (!PROTOCOLS.has(protocol)) {
    throw DomainError.invalidParameter('protocol', ParameterIssue.InvalidFormat, `protocol must be one of ${[...PROTOCOLS].join(', ')}.`);
  }
  if (protocol === CredentialProtocol.Teltonika) {
    if (given === undefined) throw DomainError.invalidParameter('identifier', ParameterIssue.Required, 'A Teltonika credential needs the device\'s IMEI as identifier.');
    if (!IMEI_PATTERN.test(given)) throw DomainError.invalidParameter('identifier', ParameterIssue.InvalidFormat, 'A Teltonika identifier is the 15-digit IMEI.');
    return given;
  }
  if (given === undefined) return deviceId.toLowerCase();
  if (!CREDENTIAL_IDENTIFIER_PATTERN.test(given)) {
    const issue = given.length === 0 || given.length > 64 ? ParameterIssue.OutOfRange : ParameterIssue.InvalidFormat;
    throw DomainError.invalidParameter('identifier', issue, 'identifier must be 1 to 64 of the characters A-Z, a-z, 0-9, ".", "_" and "-".');
  }
  return given;
}

/** 404 DeviceNotExists for no such device in the account; 409 DeviceRetired for a retired one, unless `retiredToo`. */
function checkOwner(owner: CredentialOwner | null, deviceId: string, retiredToo = false): asserts owner is CredentialOwner {
  if (!owner) throw deviceNotFound(deviceId);
  if (owner.retired && !retiredToo) throw new DomainError(ErrorCode.DeviceRetired, 'The device is retired; it takes no new credentials.');
}

function duplicateIdentifier(): DomainError {
  return new DomainError(ErrorCode.DuplicateIdentifier, 'This identifier is taken for this protocol; choose another.');
}

export function toCredential(entity: Omit<CredentialEntity, 'seq'>): DeviceCredential {
  return {
    id: entity.id,
    deviceId: entity.deviceId,
    protocol: entity.protocol,
    identifier: entity.identifier,
    createdAt: entity.createdAt.toISOString(),
    lastUsedAt: toDateTime(entity.lastUsedAt),
  };
}
