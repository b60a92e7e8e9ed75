// Starts `sightline herd --web` (the compiled CLI) on a free port for the tests that open its page.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const cli = join(root, 'dist', 'tools', 'cli', 'main.js');

/**
 * Runs `sightline herd <args> --web --web-port 0 --no-progress --json`; resolves with the page's
 * URL (from its "live view:" line), the process, and its stdout and stderr so far. `cleanups` gets
 * a kill.
 */
export async function startWebHerd(
  args: string[],
  cleanups: (() => Promise<void> | void)[],
): Promise<{ url: string; herd: ChildProcess; output: () => string; errors: () => string }> {
  const herd = spawn(process.execPath, [cli, 'herd', ...args, '--web', '--web-port', '0', '--no-progress', '--json'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  herd.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  cleanups.push(
    () =>
      new Promise<void>((res) => {
        if (herd.exitCode !== null) return res();
        herd.once('exit', () => res());
        herd.kill('SIGKILL');
      }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "live view:" line from the herd within 50 s; stderr: ${err}`)), 50_000);
    herd.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /live view: (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    herd.once('exit', (code) => reject(new Error(`the herd exited (${code}) before serving the page: ${err}`)));
  });
  return { url, herd, output: () => out, errors: () => err };
}

/** Sends SIGINT (the herd ends its run and prints its report) and waits for the exit. */
export async function stopWebHerd(herd: ChildProcess): Promise<void> {
  if (herd.exitCode !== null) return;
  const exited = new Promise<void>((res) => herd.once('exit', () => res()));
  herd.kill('SIGINT');
  await exited;
}
