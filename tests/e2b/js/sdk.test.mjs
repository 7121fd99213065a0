// The real E2B JavaScript SDK against a server that claims to speak E2B: the
// cases of tests/e2b/python/test_sdk.py, through the JS SDK's public API.
//
// Each test makes its own sandboxes (support.mjs kills them) and asserts what
// the SDK documents: lifecycle over the REST API, commands and files over
// envd, and the isolation between sandboxes and between tenants.
//
//   node --test tests/e2b/js/   (with the variables support.mjs names)

import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'

import {
  HOME,
  MIB,
  OTHER_API_KEY,
  TEST_TIMEOUT_MS,
  e2b,
  ids,
  listed,
  rejection,
  sandboxes,
  secondsLeft,
  tag,
  waitUntil,
} from './support.mjs'

const {
  AuthenticationError,
  CommandExitError,
  FileNotFoundError,
  FileType,
  Sandbox,
  SandboxNotFoundError,
  TimeoutError,
} = e2b

const it = (name, fn) => test(name, { timeout: TEST_TIMEOUT_MS }, fn)
const bytes = (text) => new TextEncoder().encode(text)
const sorted = (list) => [...list].sort()

// --- lifecycle (REST) --------------------------------------------------------

it('create with metadata, envs and timeout, then kill', async (t) => {
  const make = sandboxes(t)
  const metadata = { suite: tag(), purpose: 'create and kill' }
  const sandbox = await make({
    metadata,
    envs: { CREATED_WITH: 'envs-at-create' },
    timeoutMs: 90_000,
  })
  assert.ok(sandbox.sandboxId)
  assert.equal(await sandbox.isRunning(), true)
  const info = await sandbox.getInfo()
  assert.deepEqual(info.metadata, metadata)
  const left = (info.endAt.getTime() - Date.now()) / 1000
  assert.ok(left >= 80 && left <= 95, `${left} s left`)
  assert.equal((await sandbox.commands.run('echo "$CREATED_WITH"')).stdout, 'envs-at-create\n')

  assert.equal(await sandbox.kill(), true)
  assert.equal(await sandbox.isRunning(), false)
  await rejection(Sandbox.getInfo(sandbox.sandboxId), SandboxNotFoundError)
})

it('getInfo describes the running sandbox', async (t) => {
  const make = sandboxes(t)
  const suite = tag()
  const before = Date.now()
  const sandbox = await make({ metadata: { suite, k: 'v' }, timeoutMs: 100_000 })
  const info = await sandbox.getInfo()
  assert.equal(info.sandboxId, sandbox.sandboxId)
  assert.deepEqual(info.metadata, { suite, k: 'v' })
  assert.equal(info.state, 'running')
  assert.ok(info.templateId)
  assert.ok(info.startedAt instanceof Date && info.endAt instanceof Date)
  assert.ok(info.startedAt.getTime() >= before - 5000, info.startedAt)
  assert.ok(info.startedAt.getTime() <= Date.now(), info.startedAt)
  assert.ok(info.startedAt < info.endAt)
  assert.ok(info.cpuCount >= 1, `cpuCount ${info.cpuCount}`)
  assert.ok(info.memoryMB >= 1, `memoryMB ${info.memoryMB}`)
  assert.match(info.envdVersion, /^\d+\.\d+\.\d+/)
  const [major, minor] = info.envdVersion.split('.').map(Number)
  assert.ok(major > 0 || minor >= 1, `envd ${info.envdVersion} older than 0.1.0`)
  // the static form answers the same
  assert.equal((await Sandbox.getInfo(sandbox.sandboxId)).sandboxId, sandbox.sandboxId)
})

it('list filters by metadata', async (t) => {
  const make = sandboxes(t)
  const suite = tag()
  const first = await make({ metadata: { suite, role: 'first one' } })
  const second = await make({ metadata: { suite, role: 'second/one' } })

  const onlyFirst = (await listed({ query: { metadata: { suite, role: 'first one' } } }))
    .sandboxes
  assert.deepEqual(
    onlyFirst.map((s) => s.sandboxId),
    [first.sandboxId],
  )
  assert.deepEqual(onlyFirst[0].metadata, { suite, role: 'first one' })
  assert.equal(onlyFirst[0].state, 'running')

  assert.deepEqual(await ids({ query: { metadata: { role: 'second/one', suite } } }), [
    second.sandboxId,
  ])
  assert.deepEqual(
    sorted(await ids({ query: { metadata: { suite } } })),
    sorted([first.sandboxId, second.sandboxId]),
  )
  assert.deepEqual(await ids({ query: { metadata: { suite, role: 'third' } } }), [])
})

it('list pages by limit and nextToken', async (t) => {
  const make = sandboxes(t)
  const suite = tag()
  const made = []
  for (let i = 0; i < 3; i++) made.push((await make({ metadata: { suite } })).sandboxId)

  const { sandboxes: all, pages } = await listed({ query: { metadata: { suite } }, limit: 1 })
  assert.deepEqual(sorted(all.map((s) => s.sandboxId)), sorted(made))
  assert.ok(pages.length >= 3, `${pages.length} pages of 1 for 3 sandboxes`)
  for (const page of pages) assert.ok(page.length <= 1, `a page of ${page.length} past limit 1`)

  // a paginator started from a page's token goes on after that page
  const paginator = Sandbox.list({ query: { metadata: { suite } }, limit: 2 })
  const firstTwo = await paginator.nextItems()
  assert.equal(firstTwo.length, 2)
  assert.equal(paginator.hasNext, true)
  assert.ok(paginator.nextToken)
  const rest = await ids({
    query: { metadata: { suite } },
    limit: 2,
    nextToken: paginator.nextToken,
  })
  assert.deepEqual(sorted([...firstTwo.map((s) => s.sandboxId), ...rest]), sorted(made))
})

it('a killed sandbox is gone', async (t) => {
  const make = sandboxes(t)
  const suite = tag()
  const sandbox = await make({ metadata: { suite } })
  const { sandboxId } = sandbox
  assert.equal(await Sandbox.kill(sandboxId), true)

  assert.equal(await sandbox.kill(), false)
  assert.equal(await Sandbox.kill(sandboxId), false)
  await rejection(Sandbox.connect(sandboxId), SandboxNotFoundError)
  await rejection(sandbox.setTimeout(60_000), SandboxNotFoundError)
  assert.deepEqual(await ids({ query: { metadata: { suite } } }), [])
  await rejection(sandbox.commands.run('echo still here'), SandboxNotFoundError)
})

it('setTimeout moves the end', async (t) => {
  const sandbox = await sandboxes(t)()
  await sandbox.setTimeout(300_000)
  let left = await secondsLeft(sandbox.sandboxId)
  assert.ok(left >= 290 && left <= 305, `${left} s left`)
  await sandbox.setTimeout(40_000)
  left = await secondsLeft(sandbox.sandboxId)
  assert.ok(left >= 30 && left <= 45, `${left} s left`)
  // the static form too
  await Sandbox.setTimeout(sandbox.sandboxId, 100_000)
  left = await secondsLeft(sandbox.sandboxId)
  assert.ok(left >= 90 && left <= 105, `${left} s left`)
})

it('a sandbox ends at its timeout', async (t) => {
  const sandbox = await sandboxes(t)({ timeoutMs: 2000 })
  const { sandboxId } = sandbox
  const gone = async () => {
    try {
      await Sandbox.getInfo(sandboxId)
      return false
    } catch (err) {
      if (err instanceof SandboxNotFoundError) return true
      throw err
    }
  }
  await waitUntil(gone, 30, `sandbox ${sandboxId} ended after its 2 s timeout`)
  assert.equal(await Sandbox.kill(sandboxId), false)
})

it('connect by id reaches the same sandbox', async (t) => {
  const sandbox = await sandboxes(t)({ timeoutMs: 60_000 })
  await sandbox.files.write(`${HOME}/marker.txt`, 'written before connect\n')

  const same = await Sandbox.connect(sandbox.sandboxId, { timeoutMs: 600_000 })
  assert.equal(same.sandboxId, sandbox.sandboxId)
  assert.equal(
    (await same.commands.run(`cat ${HOME}/marker.txt`)).stdout,
    'written before connect\n',
  )
  // a longer timeout given to connect extends a running sandbox's
  const left = await secondsLeft(sandbox.sandboxId)
  assert.ok(left >= 590 && left <= 605, `${left} s left`)
  // and the instance method reaches it too
  assert.equal((await sandbox.connect()).sandboxId, sandbox.sandboxId)
})

// --- commands (envd process service) -----------------------------------------

it('run returns stdout', async (t) => {
  const sandbox = await sandboxes(t)()
  const result = await sandbox.commands.run('echo hello e2b')
  assert.deepEqual(
    [result.stdout, result.stderr, result.exitCode],
    ['hello e2b\n', '', 0],
  )
})

it('run returns stderr', async (t) => {
  const sandbox = await sandboxes(t)()
  const seen = []
  const result = await sandbox.commands.run('echo oops >&2', { onStderr: (s) => seen.push(s) })
  assert.deepEqual([result.stdout, result.stderr, result.exitCode], ['', 'oops\n', 0])
  assert.equal(seen.join(''), 'oops\n')
})

it('a non-zero exit rejects with its code and output', async (t) => {
  const sandbox = await sandboxes(t)()
  const err = await rejection(
    sandbox.commands.run('echo out; echo err >&2; exit 3'),
    CommandExitError,
  )
  assert.deepEqual([err.exitCode, err.stdout, err.stderr], [3, 'out\n', 'err\n'])
})

it('envs and cwd are per command', async (t) => {
  const sandbox = await sandboxes(t)()
  assert.equal(await sandbox.files.makeDir(`${HOME}/work dir`), true)
  let result = await sandbox.commands.run('echo "$GREETING"; pwd', {
    envs: { GREETING: 'hi there' },
    cwd: `${HOME}/work dir`,
  })
  assert.equal(result.stdout, `hi there\n${HOME}/work dir\n`)
  // neither carries over to the next command, which starts at home
  result = await sandbox.commands.run('echo "[$GREETING]"; pwd')
  assert.equal(result.stdout, `[]\n${HOME}\n`)
})

it("the sandbox's envs reach every command", async (t) => {
  const sandbox = await sandboxes(t)({
    envs: { SANDBOX_LEVEL: 'set at create', OTHER: 'kept' },
  })
  assert.equal((await sandbox.commands.run('echo "$SANDBOX_LEVEL"')).stdout, 'set at create\n')
  const handle = await sandbox.commands.run('echo "$SANDBOX_LEVEL" "$OTHER"', {
    background: true,
  })
  assert.equal((await handle.wait()).stdout, 'set at create kept\n')
  // a command's own envs win over the sandbox's
  const overridden = await sandbox.commands.run('echo "$SANDBOX_LEVEL" "$OTHER"', {
    envs: { SANDBOX_LEVEL: 'per command' },
  })
  assert.equal(overridden.stdout, 'per command kept\n')
})

it('onStdout receives output as it is printed', async (t) => {
  const sandbox = await sandboxes(t)()
  const chunks = []
  const result = await sandbox.commands.run(
    'for i in 1 2 3 4; do echo line$i; sleep 0.5; done',
    { onStdout: (text) => chunks.push([performance.now(), text]) },
  )
  const ended = performance.now()
  assert.equal(result.stdout, 'line1\nline2\nline3\nline4\n')
  assert.equal(chunks.map(([, text]) => text).join(''), result.stdout)
  // The first line came while the command still slept (1.5 s before its
  // end), not all at once when it exited.
  assert.ok(ended - chunks[0][0] >= 1000, JSON.stringify({ chunks, ended }))
  assert.ok(chunks.length >= 2, JSON.stringify(chunks))
})

it('a command past its timeout rejects with TimeoutError', async (t) => {
  const sandbox = await sandboxes(t)()
  const started = performance.now()
  await rejection(sandbox.commands.run('sleep 30; echo woke', { timeoutMs: 2000 }), TimeoutError)
  assert.ok(performance.now() - started < 15_000)
  // the sandbox goes on serving
  assert.equal((await sandbox.commands.run('echo after')).stdout, 'after\n')
})

it('a background command is listed, killed and waited for', async (t) => {
  const sandbox = await sandboxes(t)()
  const handle = await sandbox.commands.run('sleep 60', { background: true })
  assert.ok(handle.pid > 0)
  const running = new Map((await sandbox.commands.list()).map((p) => [p.pid, p]))
  assert.ok(running.has(handle.pid), JSON.stringify([...running.keys()]))
  assert.equal(running.get(handle.pid).cmd, '/bin/bash')
  assert.deepEqual(running.get(handle.pid).args, ['-l', '-c', 'sleep 60'])

  assert.equal(await sandbox.commands.kill(handle.pid), true)
  const err = await rejection(handle.wait(), CommandExitError)
  assert.notEqual(err.exitCode, 0)
  await waitUntil(
    async () => !(await sandbox.commands.list()).some((p) => p.pid === handle.pid),
    10,
    `process ${handle.pid} left the list`,
  )
  assert.equal(await sandbox.commands.kill(handle.pid), false)
})

it('a background command is waited for with its output', async (t) => {
  const sandbox = await sandboxes(t)()
  const seen = []
  const handle = await sandbox.commands.run('echo started; sleep 0.3; echo done', {
    background: true,
    onStdout: (s) => seen.push(s),
  })
  const result = await handle.wait()
  assert.deepEqual([result.stdout, result.exitCode], ['started\ndone\n', 0])
  assert.equal(seen.join(''), 'started\ndone\n')
  assert.equal(handle.exitCode, 0)
})

it('connect to a running command streams the rest of its output', async (t) => {
  const sandbox = await sandboxes(t)()
  const handle = await sandbox.commands.run('sleep 1; echo late; exit 4', { background: true })
  await handle.disconnect()
  const again = await sandbox.commands.connect(handle.pid)
  const err = await rejection(again.wait(), CommandExitError)
  assert.deepEqual([err.exitCode, err.stdout], [4, 'late\n'])
})

it('sendStdin reaches a running cat', async (t) => {
  const sandbox = await sandboxes(t)()
  let echoed = ''
  const handle = await sandbox.commands.run('cat', {
    background: true,
    stdin: true,
    timeoutMs: 30_000,
    onStdout: (s) => {
      echoed += s
    },
  })
  try {
    await sandbox.commands.sendStdin(handle.pid, 'first line\n')
    await waitUntil(() => echoed.includes('first line\n'), 20, `cat echoed: ${echoed}`)
    assert.equal(echoed, 'first line\n')
    await handle.sendStdin(bytes('second \x01 line\n'))
    await waitUntil(() => echoed.endsWith('line\n') && echoed.includes('second'), 20, echoed)
    assert.equal(echoed, 'first line\nsecond \x01 line\n')
  } finally {
    await handle.kill()
  }
})

it('closeStdin ends cat', async (t) => {
  const sandbox = await sandboxes(t)()
  const handle = await sandbox.commands.run('cat; echo eof', { background: true, stdin: true })
  await handle.sendStdin('all of it\n')
  await sandbox.commands.closeStdin(handle.pid)
  const result = await handle.wait()
  assert.deepEqual([result.stdout, result.exitCode], ['all of it\neof\n', 0])
})

it('a PTY echoes input, reports its size and resizes', async (t) => {
  const sandbox = await sandboxes(t)()
  let screen = Buffer.alloc(0)
  const terminal = await sandbox.pty.create({
    rows: 24,
    cols: 80,
    timeoutMs: 60_000,
    onData: (data) => {
      screen = Buffer.concat([screen, data])
    },
  })
  const shown = (marker) => () => screen.includes(marker)
  try {
    await sandbox.pty.sendInput(terminal.pid, bytes('stty size; echo tty-$((6*7))\n'))
    await waitUntil(shown('tty-42'), 20, `tty-42 on the terminal: ${screen}`)
    assert.ok(screen.includes('24 80'), screen.toString())
    await sandbox.pty.resize(terminal.pid, { rows: 40, cols: 120 })
    await sandbox.pty.sendInput(terminal.pid, bytes('stty size; echo resized-$((6*7))\n'))
    await waitUntil(shown('resized-42'), 20, `resized-42 on the terminal: ${screen}`)
    assert.ok(screen.includes('40 120'), screen.toString())
    // a terminal is a process of the sandbox like any other
    assert.ok((await sandbox.commands.list()).some((p) => p.pid === terminal.pid))
  } finally {
    assert.equal(await sandbox.pty.kill(terminal.pid), true)
  }
  // killed, it ends with a signal's exit, and is no longer listed
  const err = await rejection(terminal.wait(), CommandExitError)
  assert.notEqual(err.exitCode, 0)
  await waitUntil(
    async () => !(await sandbox.commands.list()).some((p) => p.pid === terminal.pid),
    10,
    `terminal ${terminal.pid} left the list`,
  )
})

// --- files (envd /files and filesystem service) ------------------------------

it('write and read text', async (t) => {
  const sandbox = await sandboxes(t)()
  const text = 'hello\nwörld ✓\n'
  const written = await sandbox.files.write(`${HOME}/notes/a.txt`, text)
  assert.deepEqual(
    [written.name, written.path, written.type],
    ['a.txt', `${HOME}/notes/a.txt`, FileType.FILE],
  )
  assert.equal(await sandbox.files.read(`${HOME}/notes/a.txt`), text)
  // the file is really in the sandbox, as its commands see it
  assert.equal((await sandbox.commands.run(`cat ${HOME}/notes/a.txt`)).stdout, text)
})

it('write and read every byte value', async (t) => {
  const sandbox = await sandboxes(t)()
  const data = Buffer.alloc(768, 0)
  for (let i = 0; i < data.length; i++) data[i] = i % 256
  await sandbox.files.write(`${HOME}/bytes.bin`, new Uint8Array(data).buffer)
  const read = await sandbox.files.read(`${HOME}/bytes.bin`, { format: 'bytes' })
  assert.ok(read instanceof Uint8Array)
  assert.ok(Buffer.from(read).equals(data), 'the bytes read back differ')
  const blob = await sandbox.files.read(`${HOME}/bytes.bin`, { format: 'blob' })
  assert.ok(Buffer.from(await blob.arrayBuffer()).equals(data), 'the blob read back differs')
  assert.equal((await sandbox.commands.run(`wc -c < ${HOME}/bytes.bin`)).stdout.trim(), '768')
})

it('write and read five MiB', async (t) => {
  const sandbox = await sandboxes(t)()
  const data = randomBytes(5 * MIB)
  await sandbox.files.write(`${HOME}/big.bin`, new Uint8Array(data).buffer)
  assert.equal((await sandbox.files.getInfo(`${HOME}/big.bin`)).size, 5 * MIB)
  const read = await sandbox.files.read(`${HOME}/big.bin`, { format: 'bytes' })
  assert.ok(Buffer.from(read).equals(data), 'the 5 MiB read back differ')
})

it('a stream is written as octet-stream and read as a stream', async (t) => {
  const sandbox = await sandboxes(t)()
  const data = randomBytes(3 * MIB + 7)
  const chunks = [data.subarray(0, MIB), data.subarray(MIB, 2 * MIB), data.subarray(2 * MIB)]
  const source = new ReadableStream({
    pull(controller) {
      const next = chunks.shift()
      if (next) controller.enqueue(new Uint8Array(next))
      else controller.close()
    },
  })
  const written = await sandbox.files.write(`${HOME}/streamed.bin`, source)
  assert.deepEqual([written.name, written.path], ['streamed.bin', `${HOME}/streamed.bin`])
  const stream = await sandbox.files.read(`${HOME}/streamed.bin`, { format: 'stream' })
  const parts = []
  for await (const part of stream) parts.push(Buffer.from(part))
  assert.ok(Buffer.concat(parts).equals(data), 'the streamed bytes read back differ')
})

it('gzip uploads and downloads round-trip', async (t) => {
  const sandbox = await sandboxes(t)()
  const text = 'compressible '.repeat(10_000)
  await sandbox.files.write(`${HOME}/zipped.txt`, text, { gzip: true })
  assert.equal((await sandbox.files.getInfo(`${HOME}/zipped.txt`)).size, text.length)
  assert.equal(await sandbox.files.read(`${HOME}/zipped.txt`, { gzip: true }), text)
  assert.equal(
    (await sandbox.commands.run(`head -c 26 ${HOME}/zipped.txt`)).stdout,
    'compressible compressible ',
  )
})

it('writeFiles writes several files at once', async (t) => {
  const sandbox = await sandboxes(t)()
  const written = await sandbox.files.write([
    { path: `${HOME}/many/one.txt`, data: 'one' },
    { path: `${HOME}/many/two.bin`, data: new Uint8Array([0, 1, 2, 255]).buffer },
  ])
  assert.deepEqual(sorted(written.map((w) => w.path)), [
    `${HOME}/many/one.txt`,
    `${HOME}/many/two.bin`,
  ])
  assert.equal(await sandbox.files.read(`${HOME}/many/one.txt`), 'one')
  const two = await sandbox.files.read(`${HOME}/many/two.bin`, { format: 'bytes' })
  assert.deepEqual([...two], [0, 1, 2, 255])
})

it('relative paths resolve against home', async (t) => {
  const sandbox = await sandboxes(t)()
  const written = await sandbox.files.write('relative.txt', 'found\n')
  assert.equal(written.path, `${HOME}/relative.txt`)
  assert.equal((await sandbox.commands.run('cat relative.txt')).stdout, 'found\n')
  assert.equal(await sandbox.files.read(`${HOME}/relative.txt`), 'found\n')
})

it('list, exists, makeDir, rename and remove', async (t) => {
  const sandbox = await sandboxes(t)()
  const d = `${HOME}/tree`
  assert.equal(await sandbox.files.makeDir(d), true)
  assert.equal(await sandbox.files.makeDir(d), false)
  assert.equal(await sandbox.files.makeDir(`${d}/a/b/c`), true)
  await sandbox.files.write(`${d}/one.txt`, '1')
  await sandbox.files.write(`${d}/two.txt`, '22')

  const entries = await sandbox.files.list(d)
  assert.deepEqual(
    entries.map((e) => [e.name, e.path, e.type]).sort(),
    [
      ['a', `${d}/a`, FileType.DIR],
      ['one.txt', `${d}/one.txt`, FileType.FILE],
      ['two.txt', `${d}/two.txt`, FileType.FILE],
    ],
  )
  const deep = await sandbox.files.list(d, { depth: 3 })
  assert.deepEqual(sorted(deep.map((e) => e.path)), [
    `${d}/a`,
    `${d}/a/b`,
    `${d}/a/b/c`,
    `${d}/one.txt`,
    `${d}/two.txt`,
  ])

  assert.equal(await sandbox.files.exists(`${d}/one.txt`), true)
  assert.equal(await sandbox.files.exists(`${d}/a`), true)
  assert.equal(await sandbox.files.exists(`${d}/none.txt`), false)

  const moved = await sandbox.files.rename(`${d}/one.txt`, `${d}/a/moved.txt`)
  assert.deepEqual(
    [moved.name, moved.path, moved.type],
    ['moved.txt', `${d}/a/moved.txt`, FileType.FILE],
  )
  assert.equal(await sandbox.files.exists(`${d}/one.txt`), false)
  assert.equal(await sandbox.files.read(`${d}/a/moved.txt`), '1')

  await sandbox.files.remove(`${d}/two.txt`)
  assert.equal(await sandbox.files.exists(`${d}/two.txt`), false)
  await sandbox.files.remove(d)
  assert.equal(await sandbox.files.exists(d), false)
  await rejection(sandbox.files.read(`${d}/a/moved.txt`), FileNotFoundError)
  await rejection(sandbox.files.list(d), FileNotFoundError)
})

it('getInfo of a file and a directory', async (t) => {
  const sandbox = await sandboxes(t)()
  const before = Date.now()
  await sandbox.files.write(`${HOME}/info/five.txt`, '12345')
  const entry = await sandbox.files.getInfo(`${HOME}/info/five.txt`)
  assert.deepEqual(
    [entry.name, entry.path, entry.type, entry.size],
    ['five.txt', `${HOME}/info/five.txt`, FileType.FILE, 5],
  )
  assert.match(entry.permissions, /^-[r-][w-][xsS-][r-][w-][xsS-][r-][w-][xtT-]$/)
  // find, not stat: gVisor's release in Debian 12 fails coreutils' statx
  const mode = (await sandbox.commands.run(`find ${HOME}/info/five.txt -printf %m`)).stdout
  assert.equal(entry.mode & 0o777, parseInt(mode.trim(), 8))
  assert.ok(entry.owner && entry.group, JSON.stringify(entry))
  assert.ok(entry.modifiedTime instanceof Date, JSON.stringify(entry))
  const modified = entry.modifiedTime.getTime()
  assert.ok(modified >= before - 30_000 && modified <= Date.now() + 30_000, entry.modifiedTime)
  assert.equal(entry.symlinkTarget, undefined)

  const directory = await sandbox.files.getInfo(`${HOME}/info`)
  assert.deepEqual([directory.name, directory.type], ['info', FileType.DIR])
  await rejection(sandbox.files.getInfo(`${HOME}/info/missing`), FileNotFoundError)
})

// --- isolation ---------------------------------------------------------------

it('two sandboxes do not share files', async (t) => {
  const make = sandboxes(t)
  const [first, second] = [await make(), await make()]
  const path = `${HOME}/mine.txt`
  await first.files.write(path, "first's")
  assert.equal(await second.files.exists(path), false)
  assert.equal(
    (await second.commands.run(`test -e ${path} && echo shared || echo absent`)).stdout,
    'absent\n',
  )
  await second.files.write(path, "second's")
  assert.equal(await first.files.read(path), "first's")
  assert.equal(await second.files.read(path), "second's")
})

it('another tenant can neither see nor touch a sandbox', async (t) => {
  const make = sandboxes(t)
  const suite = tag()
  const mine = await make({ metadata: { suite } })
  const theirs = await make({ metadata: { suite }, apiKey: OTHER_API_KEY })

  assert.deepEqual(await ids({ query: { metadata: { suite } } }), [mine.sandboxId])
  assert.deepEqual(await ids({ query: { metadata: { suite } }, apiKey: OTHER_API_KEY }), [
    theirs.sandboxId,
  ])

  const asOther = { apiKey: OTHER_API_KEY }
  await rejection(Sandbox.getInfo(mine.sandboxId, asOther), SandboxNotFoundError)
  await rejection(Sandbox.connect(mine.sandboxId, asOther), SandboxNotFoundError)
  await rejection(Sandbox.setTimeout(mine.sandboxId, 5000, asOther), SandboxNotFoundError)
  assert.equal(await Sandbox.kill(mine.sandboxId, asOther), false)
  assert.equal((await mine.commands.run('echo untouched')).stdout, 'untouched\n')
  assert.ok((await secondsLeft(mine.sandboxId)) > 60)
})

it('envd refuses a wrong access token', async (t) => {
  // Knowing a sandbox's id is not enough to use it: envd wants the
  // sandbox's access token (handed out by create and connect only).
  const sandbox = await sandboxes(t)()
  const { envdVersion } = await sandbox.getInfo()
  for (const envdAccessToken of ['not-the-token', undefined]) {
    // the SDK's constructor, as Sandbox.create and connect call it
    const stranger = new Sandbox({ sandboxId: sandbox.sandboxId, envdVersion, envdAccessToken })
    await rejection(stranger.commands.run('echo should not run'), AuthenticationError)
    await rejection(stranger.files.write(`${HOME}/should-not-exist`, 'x'), AuthenticationError)
    await rejection(stranger.files.list(HOME), AuthenticationError)
    await rejection(stranger.files.read(`${HOME}/marker`), AuthenticationError)
  }
  assert.equal(await sandbox.files.exists(`${HOME}/should-not-exist`), false)
})

it('a wrong API key is refused', async () => {
  const apiKey = 'not-a-key-this-server-knows-0123456789'
  await rejection(Sandbox.create({ apiKey, timeoutMs: 30_000 }), AuthenticationError)
  await rejection(Sandbox.list({ apiKey }).nextItems(), AuthenticationError)
  await rejection(Sandbox.getInfo('sb-0123456789abcdef', { apiKey }), AuthenticationError)
})
