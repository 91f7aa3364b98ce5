import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
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
import { PointsOfInterestService } from './points-of-interest.service.js';

@Controller()
export class PointsOfInterestHandler {
  constructor(private readonly pointsOfInterest: PointsOfInterestService) {}

  @MessagePattern(Subjects.oms.pointsOfInterest.list)
  list(@Payload() request: ListPointsOfInterestRequest): Promise<ItemPage<PointOfInterest>> {
    return this.pointsOfInterest.list(request);
  }

  @MessagePattern(Subjects.oms.pointsOfInterest.create)
  create(@Payload() request: CreatePointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    return this.pointsOfInterest.create(request);
  }

  @MessagePattern(Subjects.oms.pointsOfInterest.get)
  get(@Payload() request: PointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    return this.pointsOfInterest.get(request);
  }

  @MessagePattern(Subjects.oms.pointsOfInterest.update)
  update(@Payload() request: UpdatePointOfInterestRequest): Promise<Versioned<PointOfInterest>> {
    return this.pointsOfInterest.update(request);
  }

  @MessagePattern(Subjects.oms.pointsOfInterest.delete)
  async delete(@Payload() request: DeletePointOfInterestRequest): Promise<null> {
    await this.pointsOfInterest.delete(request);
    // Not `undefined`: Nest's packet would then carry no `response`, which the gateway treats as 502.
    return null;
  }
}
