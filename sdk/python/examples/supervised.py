#!/usr/bin/env python3
"""A supervised session: print the pending approval, approve it, print the result.

    chidori serve sdk/examples/note.js --trusted --workspace /tmp/ws --listen 127.0.0.1:8080 &
    python3 sdk/python/examples/supervised.py [BASE_URL]
"""

import sys

from chidori import ChidoriError, Client


def main() -> int:
    base_url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
    try:
        with Client(base_url, timeout=60) as client:
            session = client.run({"text": "buy milk"}, policy_profile="supervised")
            while session.pending_approval is not None:  # status "awaitingapproval"
                ask = session.pending_approval
                print("pending approval %d: %s %s" % (ask.id, ask.target, ask.args.get("path")))
                print("  reason: %s" % ask.reason)
                session = client.approve(session.id, "allow", approval_id=ask.id)
                print("approved")
            if session.status == "done":
                print("session %s done: %s" % (session.id, session.result))
            else:
                print("session %s %s: %s" % (session.id, session.status, session.error))
            return 0 if session.status == "done" else 1
    except ChidoriError as e:
        print("supervised.py: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
