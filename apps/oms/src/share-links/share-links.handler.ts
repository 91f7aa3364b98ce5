import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type CreateShareLinkRequest,
  type ItemPage,
  type ListShareLinksRequest,
  type ResolvedShareLink,
  type ResolveShareLinkRequest,
  type ShareLink,
  type ShareLinkRequest,
  Subjects,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { ShareLinksService } from './share-links.service.js';

@Controller()
export class ShareLinksHandler {
  constructor(private readonly links: ShareLinksService) {}

  @Handles(Subjects.oms.shareLinks.create)
  create(@Payload() request: CreateShareLinkRequest): Promise<ShareLink> {
    return this.links.create(request);
  }

  @Handles(Subjects.oms.shareLinks.list)
  list(@Payload() request: ListShareLinksRequest): Promise<ItemPage<ShareLink>> {
    return this.links.list(request);
  }

  @Handles(Subjects.oms.shareLinks.delete)
  async delete(@Payload() request: ShareLinkRequest): Promise<void> {
    await this.links.revoke(request);
  }

  @Handles(Subjects.oms.shareLinks.resolve)
  resolve(@Payload() request: ResolveShareLinkRequest): Promise<ResolvedShareLink | null> {
    return this.links.resolve(request);
  }
}
