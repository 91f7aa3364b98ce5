import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type AuthenticateDeviceRequest,
  type AuthenticatedDevice,
  type CreateCredentialRequest,
  type DeleteCredentialRequest,
  type DeviceCredentialPage,
  type DeviceCredentialWithSecret,
  type ListCredentialsRequest,
  type LiveCredentialsReply,
  type LiveCredentialsRequest,
  Subjects,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { CredentialsService } from './credentials.service.js';

@Controller()
export class CredentialsHandler {
  constructor(private readonly credentials: CredentialsService) {}

  @Handles(Subjects.dms.credentials.create)
  create(@Payload() request: CreateCredentialRequest): Promise<DeviceCredentialWithSecret> {
    return this.credentials.create(request);
  }

  @Handles(Subjects.dms.credentials.list)
  list(@Payload() request: ListCredentialsRequest): Promise<DeviceCredentialPage> {
    return this.credentials.list(request);
  }

  @Handles(Subjects.dms.credentials.delete)
  async delete(@Payload() request: DeleteCredentialRequest): Promise<void> {
    await this.credentials.delete(request);
  }

  /** Called by the device gateway only. */
  @Handles(Subjects.dms.credentials.authenticate)
  authenticate(@Payload() request: AuthenticateDeviceRequest): Promise<AuthenticatedDevice | null> {
    return this.credentials.authenticate(request);
  }

  /** Called by the device gateway only. */
  @Handles(Subjects.dms.credentials.live)
  live(@Payload() request: LiveCredentialsRequest): Promise<LiveCredentialsReply> {
    return this.credentials.live(request);
  }
}
