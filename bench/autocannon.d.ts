/**
 * The part of autocannon 9's API the bench uses (the package ships no types; @types/autocannon
 * lags behind and would be one more dependency for six fields).
 */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
      /** Called before every request on a connection; returns the request to send. */
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
      /** Called with every answer of this request, before the next request is set up. */
      onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string>) => void;
    }

    interface Client extends EventEmitter {
      setRequests(requests: Request[]): void;
    }

    interface Options {
      url: string;
      connections?: number;
      pipelining?: number;
      /** Seconds; ignored when `amount` is set. */
      duration?: number;
      /** Requests in all, split evenly over the connections. */
      amount?: number;
      /** Seconds before a request counts as a timeout. */
      timeout?: number;
      requests?: Request[];
      setupClient?: (client: Client) => void;
      skipAggregateResult?: boolean;
    }

    interface Result {
      errors: number;
      timeouts: number;
      non2xx: number;
      resets: number;
      duration: number;
      start: Date;
      finish: Date;
    }

    interface Instance extends EventEmitter {
      stop(): void;
    }
  }

  function autocannon(options: autocannon.Options, callback: (err: Error | null, result: autocannon.Result) => void): autocannon.Instance;

  export = autocannon;
}
