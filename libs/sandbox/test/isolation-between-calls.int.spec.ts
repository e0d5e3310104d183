import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxPool } from '../src';

/**
 * What one call (or a thread a session cell left running) must never do to another call of the same
 * zygote: read its request, input or output; plant or read files; signal it. And what a call must never
 * do to the zygote: leave something the wipe cannot remove. One worker, so every call below shares it.
 */
let pool: SandboxPool;
beforeAll(async () => {
  pool = new SandboxPool({ workers: 1, onWarning: () => undefined });
  await pool.start();
}, 120_000);
afterAll(async () => {
  await pool?.close();
});

const restarts = () => pool.health().workers.restarts;
/** What a fresh call sees in /tmp: nothing, or the directories leading to a Python install bound there
 * (a checkout under /tmp: python-under-tmp.int.spec.ts). */
let tmpBaseline = '';
beforeAll(async () => {
  tmpBaseline = (await pool.execute({ code: 'import os\nprint(sorted(os.listdir("/tmp")))' })).stdout.trim();
});

describe('isolation between calls of one zygote', () => {
  it("a call cannot find the previous call's request or response in the frames it inherited", async () => {
    expect((await pool.execute({ code: 'print("SECRET-OUT")', input: 'SECRET-IN' })).stdout).toBe('SECRET-OUT\n');
    const r = await pool.execute({
      code: 'import sys\nf = sys._getframe()\nwhile f:\n    print(f.f_code.co_name, repr(f.f_locals)[:20000])\n    f = f.f_back',
    });
    expect(r.status).toBe('ok');
    expect(r.stdout).toMatch(/main/);
    expect(r.stdout).not.toMatch(/SECRET-(IN|OUT)/);
  });

  it("a call finds no earlier call's program, stdin, output or writes anywhere in its memory, nor does a new session", async () => {
    // Every child is forked from the zygote, so anything of a call left in the zygote's freed heap would
    // be readable here. The markers are built at run time: the scanner's own code must not contain them.
    const mark = (n: number) => `LEAK${String(n).padStart(2, '0')}Z${'abcdefghij'[n % 10]!.repeat(3)}`;
    const big = 'x'.repeat(200_000);
    // Writes a marker into every mapping it may write that a fork would share (a MAP_SHARED page of the
    // zygote's would be every later call's too).
    const planter = [
      'import ctypes',
      'n = 0',
      'for line in open("/proc/self/maps"):',
      '    f = line.split()',
      '    if f[1].startswith("rw") and f[1][3] == "s":',
      '        a, b = (int(x, 16) for x in f[0].split("-"))',
      `        ctypes.memmove(a, b"${mark(13)}", 10)`,
      '        n += 1',
      'print(n)',
    ].join('\n');
    const calls = [
      { code: planter },
      { code: planter, session: 'leak-a' },
      { code: `s = "${mark(1)}"\nprint(len(s))`, input: mark(2) },
      { code: `import sys\nprint("${mark(3)}")\nprint("${mark(4)}", file=sys.stderr)\nprint(input())`, input: mark(5) },
      // Longer than the output cap: the kept head and tail both carry a marker.
      { code: `print("${mark(6)}" + "y" * 100000 + "${mark(7)}")` },
      // A program and input larger than a pipe's buffer.
      { code: `# ${big}\nx = "${mark(8)}"\nprint(len(input()))`, input: `${big}${mark(9)}` },
      // File names are call data too: the wipe after the call must not bring them into the zygote.
      {
        code: `import os\nfor i in range(500):\n    open(f"/tmp/${mark(14)}-{i}", "w").close()\n    open(f"${mark(16)}-{i}", "w").close()\nos.makedirs("/tmp/d/${mark(15)}")\nos.makedirs("/dev/shm/${mark(17)}")`,
      },
      { code: `import sys\nprint("${mark(10)}")\nsys.exit(3)`, session: 'leak-a', input: mark(11) },
      { code: `open("/tmp/${mark(18)}", "w").close()\nopen("${mark(19)}", "w").close()`, session: 'leak-a' },
      // A thread's name, which the zygote reads in /proc to stop the session and count its CPU (freed small
      // strings are reused fast: the old code passed this too; the name is kept off the heap by construction).
      { code: `import ctypes\nctypes.CDLL(None).prctl(15, b"${mark(20)}", 0, 0, 0)\nprint(1)`, session: 'leak-a' },
      { code: 'print(2)', session: 'leak-a' },
      { code: `print("${mark(12)}")`, session: 'leak-a' },
    ];
    for (const c of calls) expect((await pool.execute(c)).status, c.code.slice(0, 40)).toMatch(/^(ok|runtime_error)$/);
    const scan = [
      'import ctypes, re',
      'found = set()',
      'for line in open("/proc/self/maps"):',
      '    f = line.split()',
      '    name = f[5] if len(f) > 5 else ""',
      // Files hold no call's bytes (a shared anonymous page shows as /dev/zero); [vvar*] etc. fault when read.
      '    if not f[1].startswith("r") or name.startswith("[v") or (name.startswith("/") and not name.startswith(("/dev/zero", "/memfd:", "/SYSV"))):',
      '        continue',
      '    a, b = (int(x, 16) for x in f[0].split("-"))',
      '    data = ctypes.string_at(a, b - a)',
      '    found.update(m.decode() for m in re.findall(rb"LEAK[0-9]{2}Z[a-j]{3}", data))',
      'print(sorted(found))',
    ].join('\n');
    for (const session of [undefined, 'leak-b']) {
      const r = await pool.execute({ code: scan, session, timeoutMs: 30_000 });
      expect(r, session ?? 'stateless').toMatchObject({ status: 'ok', stdout: '[]\n' });
    }
    await pool.endSession('leak-a');
    await pool.endSession('leak-b');
  }, 120_000);

  it('what a session cell leaves in the shared temp dirs is wiped however its interpreter ends (a real-time signal too)', async () => {
    const r = await pool.execute({
      session: 'rt-signal',
      code: 'import os\nopen("/tmp/left-by-cell", "w").write("x")\nos.mkdir("/dev/shm/left-dir")\nos.kill(os.getpid(), 35)',
    });
    expect(r).toMatchObject({ status: 'runtime_error', signal: 'SIGRTMIN+1', sessionReset: true });
    const v = await pool.execute({ code: 'import os\nprint(sorted(os.listdir("/tmp")), os.listdir("/dev/shm"))' });
    expect(v).toMatchObject({ status: 'ok', stdout: `${tmpBaseline} []\n` });
  });

  it('a directory nested deeper than the recursion limit is wiped, in /tmp and in the work dir', async () => {
    const deep = (where: string) =>
      `import os\nos.chdir(${JSON.stringify(where)})\nfor i in range(3000):\n    os.mkdir("d")\n    os.chdir("d")\nopen("leaf.txt", "w").write("x")\nprint("deep")`;
    for (const where of ['/tmp', '.']) {
      expect(await pool.execute({ code: deep(where), timeoutMs: 30_000 })).toMatchObject({ status: 'ok', stdout: 'deep\n' });
      const r = await pool.execute({ code: 'import os\nprint(sorted(os.listdir("/tmp")), os.listdir("."))' });
      expect(r).toMatchObject({ status: 'ok', stdout: `${tmpBaseline} []\n` });
    }
    expect(restarts()).toBe(0);
  }, 120_000);

  it('input that is not valid Unicode is refused naming the field, as often as it comes', async () => {
    for (let i = 0; i < 50; i++) {
      const r = await pool.execute({ code: 'print(1)', input: 'a\udfffb' });
      expect(r.status).toBe('invalid_request');
      expect(r.stderr).toMatch(/input.*lone UTF-16 surrogate.*index 1/);
    }
    expect((await pool.execute({ code: 'print(1)', input: '\ud800' })).stderr).toMatch(/input/);
    expect((await pool.execute({ code: 'x = "\ud800"' })).stderr).toMatch(/code/);
    expect(await pool.execute({ code: 'print(input())', input: 'ok 😀' })).toMatchObject({ status: 'ok', stdout: 'ok 😀\n' });
  });

  it("a thread a session cell leaves running can neither see, plant in, read nor signal other calls", async () => {
    // The thread keeps trying for as long as it runs: list and plant into every work dir, read every
    // stdin file, plant into /tmp, kill every process it can.
    const spy = `
import os, threading, time, signal
seen = []
def spy():
    while True:
        try:
            for d in os.listdir("/run/rstar"):
                seen.append(d)
        except OSError:
            pass
        for p in ("/run/rstar", "/tmp"):
            try:
                open(p + "/planted.txt", "w").write("x")
            except OSError:
                pass
        mine = {int(t) for t in os.listdir("/proc/self/task")}  # kill(tid) would end this very process
        for pid in range(2, 200):
            if pid not in mine:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.001)
threading.Thread(target=spy, daemon=True).start()
time.sleep(0.05)
print("spy started")`;
    expect(await pool.execute({ session: 'spy', code: spy })).toMatchObject({ status: 'ok', stdout: 'spy started\n' });
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 30));
      const v = await pool.execute({
        code: 'import os, time\ntime.sleep(0.05)\nprint(os.listdir("."), sorted(os.listdir("/tmp")), input())',
        input: 'VICTIM-STDIN',
      });
      expect(v).toMatchObject({ status: 'ok', stdout: `[] ${tmpBaseline} VICTIM-STDIN\n` });
    }
    // The session itself lives on with its state; its thread saw no directory listing at all.
    const back = await pool.execute({ session: 'spy', code: 'print(len(seen), threading.active_count())' });
    expect(back).toMatchObject({ status: 'ok', sessionReset: false, stdout: '0 2\n' });
    await pool.endSession('spy');
    expect(restarts()).toBe(0);
  });

  it('System V IPC and abstract sockets do not outlive a call or leak out of a session', async () => {
    expect((pool as unknown as { workers: { info: Record<string, unknown> }[] }).workers[0]!.info.privateNamespaces).toBe(true);
    // A shared memory segment and a message queue, world-readable, left behind by a stateless call...
    const leave = `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x1234, 4096, 0o1000 | 0o666)
q = libc.msgget(0x4321, 0o1000 | 0o666)
print(shm >= 0, q >= 0)`;
    expect((await pool.execute({ code: leave })).stdout).toBe('True True\n');
    // ...are not there for the next call, nor for a session.
    const look = 'print(open("/proc/sysvipc/shm").read().count("\\n"), open("/proc/sysvipc/msg").read().count("\\n"))';
    expect((await pool.execute({ code: look })).stdout).toBe('1 1\n');
    expect((await pool.execute({ session: 'ipc', code: look })).stdout).toBe('1 1\n');
    // A session's listening sockets (abstract unix, loopback TCP) cannot be reached from other calls.
    const listen = `import socket
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); u.bind("\\0rstar-chan"); u.listen()
t = socket.socket(); t.bind(("127.0.0.1", 7777)); t.listen()
print("listening")`;
    expect((await pool.execute({ session: 'ipc', code: listen })).stdout).toBe('listening\n');
    const reach = `import socket
out = []
for fam, addr in ((socket.AF_UNIX, "\\0rstar-chan"), (socket.AF_INET, ("127.0.0.1", 7777))):
    c = socket.socket(fam, socket.SOCK_STREAM)
    try:
        c.connect(addr); out.append("reached")
    except OSError:
        out.append("refused")
print(out)`;
    expect((await pool.execute({ code: reach })).stdout).toBe("['refused', 'refused']\n");
    // Inside the session its own loopback works.
    expect((await pool.execute({ session: 'ipc', code: reach })).stdout).toBe("['reached', 'reached']\n");
    await pool.endSession('ipc');
  });

  it('a cell that forges its result line or keeps forking cannot keep running between cells', async () => {
    const plant = (n: string) => `
import os, threading, time
def plant():
    while True:
        try:
            open("/tmp/${n}", "w").write("x")
        except OSError:
            pass
        time.sleep(0.001)
threading.Thread(target=plant, daemon=True).start()`;
    // 1. A malformed line on the result pipe (fd 4): the session is reset, nothing of it survives.
    const forged = await pool.execute({ session: 'forge', code: `${plant('forged')}\nimport os\nos.write(4, b"not json\\n")\ntime.sleep(0.3)` });
    expect(forged).toMatchObject({ status: 'killed', sessionReset: true });
    expect(forged.stderr).toMatch(/result pipe; the session was reset/);
    // 2. A thread that forks in a loop (a fork refused at the task limit is retried at once).
    const forker = `${plant('forker')}
def forks():
    while True:
        try:
            if os.fork() == 0:
                while True:
                    try:
                        open("/tmp/forker-child", "w").write("x")
                    except OSError:
                        pass
                    time.sleep(0.001)
        except OSError:
            pass
        time.sleep(0.002)
threading.Thread(target=forks, daemon=True).start()
time.sleep(0.05)
print("ok")`;
    expect((await pool.execute({ session: 'forker', code: `import os\n${forker}` })).stdout).toBe('ok\n');
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 30));
      const v = await pool.execute({ code: 'import os, time\ntime.sleep(0.05)\nprint(sorted(os.listdir("/tmp")))' });
      expect(v).toMatchObject({ status: 'ok', stdout: `${tmpBaseline}\n` });
    }
    expect((await pool.execute({ session: 'forker', code: 'print("still here")' })).stdout).toBe('still here\n');
    await pool.endSession('forker');
    expect(restarts()).toBe(0);
  });

  it('two sessions of one zygote cannot signal or read each other', async () => {
    expect((await pool.execute({ session: 'a', code: 'import os\nsecret = "A-ONLY"\nprint(os.getpid() > 0)' })).stdout).toBe('True\n');
    const b = await pool.execute({
      session: 'b',
      code: 'import os, signal\nhits = 0\nfor pid in range(2, 200):\n    try:\n        os.kill(pid, signal.SIGKILL)\n        hits += 1\n    except OSError:\n        pass\nprint(hits)',
    });
    // It can kill nothing but itself (and is then reset), never session a.
    expect(['0\n', '']).toContain(b.stdout);
    const a = await pool.execute({ session: 'a', code: 'print(secret)' });
    expect(a).toMatchObject({ status: 'ok', stdout: 'A-ONLY\n', sessionReset: false });
  });
});
