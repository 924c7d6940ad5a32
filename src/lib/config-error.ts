/**
 * A missing or malformed configuration: the process entries exit with EXIT_CODES.config on it
 * (src/lib/lifecycle.ts). Its message names the variable and what is wrong, never the value.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
