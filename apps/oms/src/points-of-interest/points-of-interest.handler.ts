import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type CreatePointOfInterestRequest,
  type DeletePointOfInterestRequest,
  type ItemPage,
  type ListPointsOfInterestRequest,
  type PointOfInterest,
  type PointOfInterestRequest,
  Subjects,
  type UpdatePointOfInterestRequest,
  type Versioned,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { PointsOfInterestService } from './points-of-interest.service.js';

@Controller()
export class PointsOfInterestHandler {
  constructor(private readonly pointsOfInterest: PointsOfInterestService) {}

  @Handles(Subjects.oms.pointsOfInterest.list)
  list(@Payload() request: ListPointsOfInterestRequest): Promise<ItemPage<PointOfInterest>> {
    return this.pointsOfInterest.list(request);
  }

  @Handles(Subjects.oms.pointsOfInterest.create)
  create(@Payload() request: CreatePointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    return this.pointsOfInterest.create(request);
  }

  @Handles(Subjects.oms.pointsOfInterest.get)
  get(@Payload() request: PointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    return this.pointsOfInterest.get(request);
  }

  @Handles(Subjects.oms.pointsOfInterest.update)
  update(@Payload() request: UpdatePointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    return this.pointsOfInterest.update(request);
  }

  @Handles(Subjects.oms.pointsOfInterest.delete)
  async delete(@Payload() request: DeletePointOfInterestRequest): Promise<void> {
    await this.pointsOfInterest.delete(request);
  }
}
