import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * How X-Request-Signature is computed. The spec leaves the scheme open, so it sits behind this
 * interface: the client and the simulator take any implementation.
 */
export interface RequestSigner {
  sign(body: string): string;
  verify(body: string, signature: string): boolean;
}

export type SignatureAlgo = 'sha256' | 'sha512';
export type SignatureEncoding = 'hex' | 'base64';

/** Default scheme of the gateway contract: encode(HMAC_algo(secret, exact body bytes)). */
export function hmacSigner(secret: string, algo: SignatureAlgo, encoding: SignatureEncoding): RequestSigner {
  const sign = (body: string): string => createHmac(algo, secret).update(body, 'utf8').digest(encoding);
  return {
    sign,
    verify(body, signature) {
      const expected = Buffer.from(sign(body));
      const given = Buffer.from(signature);
      return expected.length === given.length && timingSafeEqual(expected, given);
    },
  };
}

export function basicAuthHeader(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}
