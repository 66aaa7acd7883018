#!/usr/bin/env python3
"""Where a cancel's Redis CPU goes: the seeds' poller's cancel against the
queue's cancel script and variants of it, one call at a time, on one
redis-server started here (AOF on, `appendfsync everysec`, `hz 10`, as
`benches/redis_queue.rs` runs it).

Every variant is sent by this script over one socket, so the client is the
same for all; the number that matters is the server's CPU per call
(`used_cpu_user + used_cpu_sys` of `INFO cpu` around N calls). Before each
variant the server is flushed and holds 100,000 waiting jobs (records in
the queue's format, 100-byte payloads) and the poller's 100,000 (HASH +
ZSET); N random ones are cancelled. Rounds alternate the order of the
variants.

Variants:
  poller        ZREM + HDEL in one pipeline (benches/peers/zset_poller.rs)
  trivial       EVALSHA of `return 1` with the cancel's keys and arguments
  f_trivial     the same as a Redis function (FCALL)
  read          common.lua, then HMGET of the record: the script's reads
  cancel_noset  cancel.lua without its SET of the retry's answer
  cancel        common.lua + cancel.lua, as the queue sends it
  f_cancel      the same body registered as a Redis function (FCALL)

Usage: python3 benches/redis_script_cost.py [calls per round] [rounds]
(defaults 4000 and 6). Needs redis-server 7 (functions) on the PATH.
Prints a markdown table.
"""
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src', 'redis', 'scripts')
CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 4000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
VARIANTS = ['poller', 'trivial', 'f_trivial', 'read', 'cancel_noset', 'cancel', 'f_cancel']

# 100,000 waiting jobs in the queue's record format (common.lua), and the
# poller's: payload in a HASH, due time in a ZSET.
POPULATE = """
for i = 0, 99999 do
  local id = string.format('%012d', i)
  local seq = struct.pack('>I8', i)
  local rec = struct.pack('>c1I4I4dc8c8c8', 'w', 0, 0, 1e15, seq, 'made0000', 'last0000')
    .. string.rep('p', 100)
  redis.call('HSET', 'jobs', id, rec)
  redis.call('ZADD', 'due', 1e15, seq .. id)
  redis.call('HSET', 'plain', id, string.rep('p', 100))
  redis.call('ZADD', 'pz', 1e15, id)
end
return 1"""


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def encode(*args):
    args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    return b''.join([b'*%d\r\n' % len(args)] + [b'$%d\r\n%s\r\n' % (len(a), a) for a in args])


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.file = self.sock.makefile('rb')

    def reply(self):
        line = self.file.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b'-':
            raise RuntimeError(rest.decode())
        if kind in b'+:':
            return rest
        if kind == b'$':
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b'*':
            return [self.reply() for _ in range(max(int(rest), 0))]
        raise RuntimeError(f'unexpected reply {line!r}')

    def __call__(self, *args):
        self.sock.sendall(encode(*args))
        return self.reply()

    def cpu(self):
        info = self(b'INFO', b'cpu').decode()
        fields = dict(line.split(':', 1) for line in info.splitlines() if ':' in line)
        return float(fields['used_cpu_user']) + float(fields['used_cpu_sys'])


def main():
    read = lambda name: open(os.path.join(SCRIPTS, name)).read()
    common, cancel = read('common.lua'), read('cancel.lua')
    set_answer = "  redis.call('SET', answers, cmsgpack.pack(kept), 'PX', ttl)"
    assert set_answer in cancel, 'cancel.lua changed: update the cancel_noset variant'
    scripts = {
        'trivial': 'return 1',
        'read': common + "\nreturn redis.call('HMGET', KEYS[2], ARGV[2])",
        'cancel_noset': common + cancel.replace(set_answer, '  local _ = cmsgpack.pack(kept)'),
        'cancel': common + cancel,
    }
    library = ('#!lua name=tickwheel_cost\n' + common
               + "\nredis.register_function('cancel', function(KEYS, ARGV)\n" + cancel + '\nend)\n'
               + "redis.register_function('trivial', function(KEYS, ARGV) return 1 end)\n")

    data = tempfile.mkdtemp(prefix='tw-script-cost-')
    port = free_port()
    server = subprocess.Popen(
        ['redis-server', '--port', str(port), '--bind', '127.0.0.1', '--dir', data,
         '--appendonly', 'yes', '--appendfsync', 'everysec', '--hz', '10', '--save', ''],
        stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                conn = Conn(port)
                conn(b'PING')
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError('redis-server did not start')
        sha = {name: conn(b'SCRIPT', b'LOAD', body) for name, body in scripts.items()}
        conn(b'FUNCTION', b'LOAD', b'REPLACE', library)
        version = conn(b'INFO', b'server').decode()
        version = next(l for l in version.splitlines() if l.startswith('redis_version'))

        def run(name):
            conn(b'FLUSHALL')
            conn(b'EVAL', POPULATE, 0)
            ids = [b'%012d' % i for i in random.sample(range(100_000), CALLS)]
            before, start = conn.cpu(), time.perf_counter()
            for n, job in enumerate(ids):
                if name == 'poller':
                    conn.sock.sendall(encode(b'ZREM', b'pz', job) + encode(b'HDEL', b'plain', job))
                    conn.reply()
                    conn.reply()
                    continue
                keys = [b'due', b'jobs', b'dead', b'ends', b'seq', b'spread', b'ans:' + job]
                args = [b'30000', job, b'%08d' % n]
                if name.startswith('f_'):
                    answer = conn(b'FCALL', name[2:], 7, *keys, *args)
                else:
                    answer = conn(b'EVALSHA', sha[name], 7, *keys, *args)
                if name.endswith('cancel') and answer[0] != b'c':
                    raise RuntimeError(f'{name}: {job} not cancelled: {answer!r}')
            wall = time.perf_counter() - start
            return (conn.cpu() - before) * 1e6 / CALLS, wall * 1e6 / CALLS

        results = {name: [] for name in VARIANTS}
        for r in range(ROUNDS):
            for name in VARIANTS if r % 2 == 0 else reversed(VARIANTS):
                results[name].append(run(name))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)

    print(f'{version}; {CALLS} calls a round, {ROUNDS} rounds; 100,000 jobs waiting\n')
    print('| variant | Redis CPU per call, µs: median (range) | round trip, µs: median |')
    print('|---|---:|---:|')
    for name in VARIANTS:
        cpu = [c for c, _ in results[name]]
        wall = [w for _, w in results[name]]
        print(f'| {name} | {statistics.median(cpu):.1f} ({min(cpu):.1f}–{max(cpu):.1f}) '
              f'| {statistics.median(wall):.1f} |')


if __name__ == '__main__':
    main()
