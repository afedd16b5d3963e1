/**
 * A TCP proxy in front of a real server, switched between passing traffic, refusing it (the server is down) and
 * stalling it (accepted, never answered: the server is slow). Switching away from `pass` cuts the connections
 * that are open, so that kept-alive sockets see the fault too.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'refuse' | 'stall';

export interface FaultProxy {
  url: string;
  mode: ProxyMode;
  set(mode: ProxyMode): void;
  close(): Promise<void>;
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const { hostname, port } = new URL(target);
  const open = new Set<Socket>();
  const state = { mode: 'pass' as ProxyMode };
  const server: Server = createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => {});
    if (state.mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    if (state.mode === 'stall') return; // read nothing, answer nothing
    const upstream = connect(Number(port), hostname);
    open.add(upstream);
    upstream.on('close', () => open.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port: own } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${own}`,
    get mode() {
      return state.mode;
    },
    set(mode) {
      state.mode = mode;
      if (mode !== 'pass') for (const s of open) s.destroy();
    },
    async close() {
      for (const s of open) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
