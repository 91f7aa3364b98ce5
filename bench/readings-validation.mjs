#!/usr/bin/env node
// Validation cost of one reading batch in the gateway (issue 21): the Ajv-compiled schema the gateway uses
// (`judgeEntries`, libs/readings/src/reading-entries.ts) against class-validator DTOs with the same
// rules (class-transformer's plainToInstance, then validate per entry, as a DTO per entry would be checked).
// Prints the median of BENCH_RUNS (default 7) timings of BENCH_READINGS_BATCH (default 1000) entries, and
// what that means in CPU per second at 30000 readings/s. Run after `npm run -s build`.
import 'reflect-metadata';
import { plainToInstance, Type } from 'class-transformer';
import { IsDefined, IsNumber, IsOptional, IsString, IsUUID, Length, Max, Min, ValidateNested, validate } from 'class-validator';
import { judgeEntries } from '../libs/readings/dist/reading-entries.js';
import { median } from './lib/load.mjs';

const runs = Number(process.env.BENCH_RUNS ?? 7);
const size = Number(process.env.BENCH_READINGS_BATCH ?? 1000);

/** Applies property decorators without decorator syntax (this file is plain JavaScript). */
function decorate(target, property, ...decorators) {
  for (const decorator of decorators) decorator(target.prototype, property);
}

class LocationDto {}
const bounded = (min, max, optional) => [...(optional ? [IsOptional()] : [IsDefined()]), IsNumber({ allowNaN: false, allowInfinity: false }), Min(min), Max(max)];
decorate(LocationDto, 'lat', ...bounded(-90, 90, false));
decorate(LocationDto, 'lng', ...bounded(-180, 180, false));
decorate(LocationDto, 'accuracyMeters', ...bounded(0, 100000, true));
decorate(LocationDto, 'altitudeMeters', ...bounded(-20000, 100000, true));
decorate(LocationDto, 'speedMps', ...bounded(0, 10000, true));
decorate(LocationDto, 'headingDegrees', ...bounded(0, 360, true));

class ReadingDto {}
decorate(ReadingDto, 'deviceId', IsOptional(), IsUUID());
decorate(ReadingDto, 'serialNumber', IsOptional(), IsString(), Length(1, 100));
decorate(ReadingDto, 'recordedAt', IsDefined(), IsString());
decorate(ReadingDto, 'location', IsOptional(), ValidateNested(), Type(() => LocationDto));
for (const [field, min, max] of [
  ['temperatureC', -100, 150],
  ['humidityPercent', 0, 100],
  ['shockG', 0, 1000],
  ['lightLux', 0, 200000],
  ['batteryPercent', 0, 100],
  ['pressureHpa', 300, 1200],
]) {
  decorate(ReadingDto, field, ...bounded(min, max, true));
}

const start = Date.now() - 3_600_000;
const batch = Array.from({ length: size }, (_, i) => ({
  deviceId: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a',
  recordedAt: new Date(start + i).toISOString(),
  location: { lat: 51.9 + i / 1e5, lng: 4.1, accuracyMeters: 8 },
  temperatureC: 4.5,
  batteryPercent: 80,
}));

async function time(label, work) {
  for (let i = 0; i < 3; i++) await work();
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await work();
    samples.push(performance.now() - t0);
  }
  const ms = median(samples);
  const perSecond = (ms * 30000) / size;
  process.stdout.write(`${label.padEnd(44)} ${ms.toFixed(2).padStart(8)} ms per ${size} entries, ${perSecond.toFixed(0).padStart(5)} ms of CPU per second at 30000 readings/s\n`);
  return ms;
}

const ajv = await time('Ajv schema (judgeEntries, the gateway)', () => {
  const { rejected } = judgeEntries(batch);
  if (rejected.length > 0) throw new Error(JSON.stringify(rejected[0]));
});
const classValidator = await time('class-transformer + class-validator per entry', async () => {
  for (const entry of batch) {
    const errors = await validate(plainToInstance(ReadingDto, entry), { forbidUnknownValues: true, whitelist: true, forbidNonWhitelisted: true });
    if (errors.length > 0) throw new Error(JSON.stringify(errors[0]));
  }
});
process.stdout.write(`class-validator / Ajv: ${(classValidator / ajv).toFixed(1)}x\n`);
