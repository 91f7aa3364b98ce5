import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, env, readConfig } from './config.js';

const schema = {
  PORT: env.int({ default: 3000, min: 0, max: 65535 }),
  DATABASE_URL: env.url({ default: 'postgres://localhost/db', protocols: ['postgres'] }),
  PREFIX: env.prefix({ default: '' }),
  MODE: env.oneOf(['a', 'b'] as const, { default: 'a' }),
  SECRET: env.secret({ developmentDefault: 'development-secret', minLength: 16 }),
  FLAG: env.bool({ default: false }),
};

function errorOf(source: Record<string, string>): ConfigError {
  try {
    readConfig(schema, source);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('readConfig', () => {
  const nodeEnv = process.env.NODE_ENV;
  afterEach(() => {
    process.env.NODE_ENV = nodeEnv;
  });

  it('applies defaults and parses values', () => {
    expect(readConfig(schema, {})).toEqual({
      PORT: 3000,
      DATABASE_URL: 'postgres://localhost/db',
      PREFIX: '',
      MODE: 'a',
      SECRET: 'development-secret',
      FLAG: false,
    });
    expect(readConfig(schema, { FLAG: 'true' }).FLAG).toBe(true);
    expect(readConfig(schema, { FLAG: 'false' }).FLAG).toBe(false);
    expect(readConfig(schema, { PORT: '8080', PREFIX: 'test.run-1.', MODE: 'b' })).toMatchObject({
      PORT: 8080,
      PREFIX: 'test.run-1.',
      MODE: 'b',
    });
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ PORT: '1.5' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'mysql://localhost/db' }, 'DATABASE_URL'],
    [{ PREFIX: 'no-trailing-dot' }, 'PREFIX'],
    [{ PREFIX: 'a..b.' }, 'PREFIX'],
    [{ PREFIX: 'wild.*.' }, 'PREFIX'],
    [{ MODE: 'c' }, 'MODE'],
    [{ SECRET: 'short' }, 'SECRET'],
    [{ FLAG: 'yes' }, 'FLAG'],
    [{ FLAG: 'TRUE' }, 'FLAG'],
    [{ FLAG: '1' }, 'FLAG'],
  ])('names the bad variable in %j', (source, variable) => {
    const error = errorOf(source);
    expect(error.variable).toBe(variable);
    expect(error.message).toContain(variable);
  });

  it('requires secrets in production instead of using the development default', () => {
    process.env.NODE_ENV = 'production';
    expect(errorOf({}).variable).toBe('SECRET');
    expect(readConfig(schema, { SECRET: 'a-production-secret-value' }).SECRET).toBe('a-production-secret-value');
  });
});
