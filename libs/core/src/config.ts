/**
 * A small typed reader for environment variables. Each app declares its own schema and calls
 * `readConfig` once at start; the first bad variable stops the process with a message naming it.
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`Invalid configuration: ${variable} ${reason}`);
    this.name = 'ConfigError';
  }
}

export type Reader<T> = (name: string, raw: string | undefined) => T;

function requireLength(name: string, value: string | undefined, minLength: number): string {
  if (value === undefined) throw new ConfigError(name, 'is required');
  if (value.length < minLength) throw new ConfigError(name, `must be at least ${minLength} characters long`);
  return value;
}

export const env = {
  string(options: { default?: string; minLength?: number } = {}): Reader<string> {
    return (name, raw) => {
      const value = raw === undefined || raw === '' ? options.default : raw;
      return requireLength(name, value, options.minLength ?? 0);
    };
  },
  /** A secret with a convenience default for development; with NODE_ENV=production it must be set. */
  secret(options: { developmentDefault: string; minLength: number }): Reader<string> {
    return (name, raw) => {
      const production = process.env.NODE_ENV === 'production';
      const value = raw === undefined || raw === '' ? (production ? undefined : options.developmentDefault) : raw;
      return requireLength(name, value, options.minLength ?? 0);
    };
  },
  int(options: { default?: number; min?: number; max?: number } = {}): Reader<number> {
    return (name, raw) => {
      if (raw === undefined || raw === '') {
        if (options.default === undefined) throw new ConfigError(name, 'is required');
        return options.default;
      }
      if (!/^-?\d+$/.test(raw)) throw new ConfigError(name, `must be an integer, got "${raw}"`);
      const value = Number(raw);
      if (options.min !== undefined && value < options.min) throw new ConfigError(name, `must be >= ${options.min}`);
      if (options.max !== undefined && value > options.max) throw new ConfigError(name, `must be <= ${options.max}`);
      return value;
    };
  },
  url(options: { default?: string; protocols: string[] }): Reader<string> {
    return (name, raw) => {
      const value = raw === undefined || raw === '' ? options.default : raw;
      if (value === undefined) throw new ConfigError(name, 'is required');
      let parsed: URL;
      try {
        parsed = new URL(value);
      } catch {
        throw new ConfigError(name, 'must be a URL');
      }
      if (!options.protocols.includes(parsed.protocol.replace(/:$/, ''))) {
        throw new ConfigError(name, `must use one of the protocols ${options.protocols.join(', ')}`);
      }
      return value;
    };
  },
  /** `true` or `false` (exactly; anything else stops the start); empty or unset means the default. */
  bool(options: { default: boolean }): Reader<boolean> {
    return (name, raw) => {
      if (raw === undefined || raw === '') return options.default;
      if (raw === 'true') return true;
      if (raw === 'false') return false;
      throw new ConfigError(name, `must be true or false, got "${raw}"`);
    };
  },
  oneOf<T extends string>(values: readonly T[], options: { default?: T } = {}): Reader<T> {
    return (name, raw) => {
      const value = raw === undefined || raw === '' ? options.default : raw;
      if (value === undefined) throw new ConfigError(name, 'is required');
      if (!values.includes(value as T)) throw new ConfigError(name, `must be one of ${values.join(', ')}`);
      return value as T;
    };
  },
  /** A subject or key prefix: empty, or letters, digits, `_` and `-` ending in a dot. */
  prefix(options: { default: string }): Reader<string> {
    return (name, raw) => {
      const value = raw ?? options.default;
      if (value !== '' && !/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.$/.test(value)) {
        throw new ConfigError(name, 'must be empty or tokens of [A-Za-z0-9_-] separated and ended by "."');
      }
      return value;
    };
  },
  /** A Redis key prefix: tokens of letters, digits, `_`, `-` and `.`, each ended by ":". */
  keyPrefix(options: { default: string }): Reader<string> {
    return (name, raw) => {
      const value = raw ?? options.default;
      if (!/^([A-Za-z0-9_.-]+:)+$/.test(value)) {
        throw new ConfigError(name, 'must be tokens of [A-Za-z0-9_.-] each ended by ":"');
      }
      return value;
    };
  },
};

export type ConfigSchema = Record<string, Reader<unknown>>;
export type ConfigOf<S extends ConfigSchema> = { readonly [K in keyof S]: ReturnType<S[K]> };

/** Reads every variable of `schema` from `source` (default `process.env`). */
export function readConfig<S extends ConfigSchema>(
  schema: S,
  source: Record<string, string | undefined> = process.env,
): ConfigOf<S> {
  const config: Record<string, unknown> = {};
  for (const [name, read] of Object.entries(schema)) config[name] = read(name, source[name]);
  return Object.freeze(config) as ConfigOf<S>;
}
