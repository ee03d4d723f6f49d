#!/usr/bin/env python3
"""Acknowledged writes beside a fault (scripts/cluster.sh load --kill-server/--scale-down).

  writes.py write URL END_UNIX LOG   # two writers create resources at URL until END_UNIX, 10 a second
                                     # in all (a steady trickle: FerretDB scans, and a collection grown
                                     # fast slows every list), each on a new connection (so kube-proxy
                                     # spreads them over the replicas); every write answered 201 is
                                     # logged: its id and what was sent
  writes.py check URL LOG            # every logged write read back: found with what was sent, or not

A write counts as acknowledged only when its 201 arrived; one that got no answer, or another status,
is counted as failed and not looked for. URL is a waiter's or a tables service's.
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse

# Writes a second, both writers together.
RATE = 10

# What each service creates, and the fields read back: path, body for n, the fields checked.
KINDS = {
    "/waiters": (lambda n: {"name": f"Fault writer {n}", "shift": "night"}, ("name", "shift")),
    "/tables": (lambda n: {"number": 1_500_000_000 + n, "seats": 4}, ("number", "seats")),
}


def request(url, method, path, body=None):
    """One request on a new connection: (status, parsed body) or (None, None) without an answer."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"content-type": "application/json", "connection": "close"} if data else {"connection": "close"}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read()
        return resp.status, (json.loads(text) if text else None)
    except (OSError, http.client.HTTPException, ValueError):
        return None, None
    finally:
        conn.close()


def kind_of(url_probe):
    for path, kind in KINDS.items():
        status, _ = request(url_probe, "GET", path + "?limit=1")
        if status == 200:
            return path, kind
    sys.exit(f"{url_probe} serves none of {', '.join(KINDS)}")


def write(url, end, log_path):
    path, (body_of, _) = kind_of(url)
    lock = threading.Lock()
    counts = {"acknowledged": 0, "no answer": 0}
    base = int(time.time() * 1000) % 100_000_000
    seq = iter(range(base, base + 10**9))
    log = open(log_path, "w")

    interval = 2 / RATE  # each of the two writers

    def writer():
        due = time.time()
        while time.time() < end:
            due += interval
            time.sleep(max(0.0, due - time.time()))
            with lock:
                n = next(seq)
            body = body_of(n)
            status, answer = request(url, "POST", path, body)
            with lock:
                if status == 201 and answer and "id" in answer:
                    counts["acknowledged"] += 1
                    log.write(json.dumps({"path": path, "id": answer["id"], "sent": body}) + "\n")
                else:
                    key = "no answer" if status is None else f"answered {status}"
                    counts[key] = counts.get(key, 0) + 1

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    failed = ", ".join(f"{n} {k}" for k, n in counts.items() if k != "acknowledged")
    print(f"{counts['acknowledged']} writes acknowledged, not acknowledged: {failed};")


def check(url, log_path):
    found = missing = changed = 0
    for line in open(log_path):
        entry = json.loads(line)
        status, answer = request(url, "GET", f"{entry['path']}/{entry['id']}")
        if status != 200:
            missing += 1
        elif any(answer.get(k) != v for k, v in entry["sent"].items()):
            changed += 1
        else:
            found += 1
    print(f"read back: {found} found as written, {missing} missing, {changed} changed")
    sys.exit(1 if missing or changed else 0)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "write":
        write(sys.argv[2], float(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
