/**
 * The namespace of the transaction ids the gateway derives for its own wallet calls (its
 * compensations, contract 5.1): no engine transaction id may start with it, in any letter case, so
 * an engine call can never take such an id. Lives on the ground floor: the engine's schemas refuse
 * it, the duties derive ids in it, and the store's claim reads it.
 */
export const RESERVED_ID_PREFIX = 'gw-';

export function isReservedId(id: string): boolean {
  return id.length >= RESERVED_ID_PREFIX.length && id.slice(0, RESERVED_ID_PREFIX.length).toLowerCase() === RESERVED_ID_PREFIX;
}
