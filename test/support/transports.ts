/** The wallet transports the wallet and money tests run over: plain HTTP/1.1, and HTTP/2 over TLS (the default for an https wallet). */
export const TRANSPORTS = [
  { label: 'HTTP/1.1', tls: false },
  { label: 'HTTP/2 over TLS', tls: true },
] as const;
