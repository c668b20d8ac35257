#!/usr/bin/env python3
"""serve.py - an inference service: answers "requests" until it is stopped.

What `make demo` runs on MIG slices of the A100 node.  A service keeps no
state worth saving, so on SIGTERM it drains (finishes the request in hand)
and exits 0 within its grace; when it is requeued (a GPU fault, say) it
simply starts again where the scheduler binds it, and says which start this
is (GPUPOOL_RESTART_COUNT).

    serve.py [PERIOD_S]      one request every PERIOD_S seconds (default 0.5)
"""
import os
import signal
import sys
import time


def main():
    period = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
    print("service %s (job %s) up on %s, restart %s" % (
        os.environ.get("GPUPOOL_TENANT"), os.environ.get("GPUPOOL_JOB_ID"),
        os.environ.get("CUDA_VISIBLE_DEVICES"), os.environ.get("GPUPOOL_RESTART_COUNT")), flush=True)
    stopping = []
    signal.signal(signal.SIGTERM, lambda sig, frame: stopping.append(sig))
    served = 0
    while not stopping:
        time.sleep(period)
        served += 1
        if served % 20 == 0:
            print("served %d requests" % served, flush=True)
    print("SIGTERM: drained after %d requests" % served, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
