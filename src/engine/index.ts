import { createLaunch, type Launch } from './launch';
import { createLookups, type Lookups } from './lookup';
import { createMoneyCalls, type MoneyCalls } from './money';
import { createSessionCalls, type SessionCalls } from './session-calls';
import type { EngineDeps } from './types';

/** The gateway's use cases over wallet, store and duties; the HTTP layer only translates. */
export interface Engine extends MoneyCalls, SessionCalls, Lookups {
  launch: Launch;
}

export function createEngine(deps: EngineDeps): Engine {
  return {
    launch: createLaunch(deps),
    ...createMoneyCalls(deps),
    ...createSessionCalls(deps),
    ...createLookups(deps),
  };
}

export type { Answer, EngineConfig, EngineDeps, EngineError, FieldIssue, LaunchResult, LookupResult, RequestContext, VerifyResult, WalletStatusView } from './types';
export { NO_CONTEXT } from './types';
