import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChurnMap } from './churn-map.js';

// Keys a plain object would treat specially: prototype names, array indices, the empty string.
const key = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '0', '12', '4294967295', '', '_', '_0'),
  fc.string({ maxLength: 3 }),
);

const operation = fc.oneof(
  fc.record({ op: fc.constant('set' as const), key, value: fc.integer() }),
  fc.record({ op: fc.constant('delete' as const), key }),
  fc.record({ op: fc.constant('get' as const), key }),
  fc.record({ op: fc.constant('has' as const), key }),
  fc.record({ op: fc.constant('clear' as const) }),
);

describe('ChurnMap', () => {
  it('answers every sequence of operations as a Map does', () => {
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 60 }), (operations) => {
        const churn = new ChurnMap<number>();
        const map = new Map<string, number>();
        for (const step of operations) {
          switch (step.op) {
            case 'set':
              expect(churn.set(step.key, step.value)).toBe(churn);
              map.set(step.key, step.value);
              break;
            case 'delete':
              expect(churn.delete(step.key)).toBe(map.delete(step.key));
              break;
            case 'get':
              expect(churn.get(step.key)).toBe(map.get(step.key));
              break;
            case 'has':
              expect(churn.has(step.key)).toBe(map.has(step.key));
              break;
            case 'clear':
              churn.clear();
              map.clear();
              break;
          }
          expect(churn.size).toBe(map.size);
        }
        expect(churn.values().sort()).toEqual([...map.values()].sort());
      }),
    );
  });

  it('holds undefined as a value, as a Map does', () => {
    const churn = new ChurnMap<undefined>();
    churn.set('a', undefined);
    expect(churn.has('a')).toBe(true);
    expect(churn.size).toBe(1);
    expect(churn.delete('a')).toBe(true);
    expect(churn.size).toBe(0);
  });
});
