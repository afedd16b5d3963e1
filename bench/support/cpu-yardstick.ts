/**
 * How much parallel CPU this (shared) machine gives right now: the same fixed CPU-bound loop on one thread,
 * then on two threads at once. 2.0 on an idle 2-core machine; less while other processes run. Measured in
 * the same rounds as the worker pools, it tells a pool that scales badly from a machine that is busy.
 */
import { Worker } from 'node:worker_threads';

const LOOP = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', (n) => {
  let x = 0x9e3779b9;
  for (let i = 0; i < n; i++) x = Math.imul(x ^ (x >>> 15), 0x85ebca6b) ^ i;
  parentPort.postMessage(x);
});`;

export class CpuYardstick {
  readonly #threads = [new Worker(LOOP, { eval: true }), new Worker(LOOP, { eval: true })];
  /** Loop iterations of one unit of work: about 150 ms on one core. */
  readonly #work = 150_000_000;

  #run(worker: Worker): Promise<void> {
    return new Promise((resolve) => {
      worker.once('message', () => resolve());
      worker.postMessage(this.#work);
    });
  }

  /** Throughput of two threads over one thread, each doing the same unit of work. */
  async scaling(): Promise<number> {
    let t = performance.now();
    await this.#run(this.#threads[0]!);
    const one = performance.now() - t;
    t = performance.now();
    await Promise.all(this.#threads.map((w) => this.#run(w)));
    const two = performance.now() - t;
    return (2 * one) / two;
  }

  /**
   * Cores two CPU-bound threads got right now (CPU time of this process ÷ wall time while both ran): 2.0 on
   * an idle 2-core machine, less when other work shares it. What "cores busy" of a pool is judged against.
   */
  async cores(): Promise<number> {
    const cpu = process.cpuUsage();
    const t = performance.now();
    await Promise.all(this.#threads.map((w) => this.#run(w)));
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / 1000 / (performance.now() - t);
  }

  async close(): Promise<void> {
    await Promise.all(this.#threads.map((w) => w.terminate()));
  }
}
