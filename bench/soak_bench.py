"""Heal soak: live writes for minutes while faults are injected at random, the heal loop on a short
schedule, and at the end the index compared with the truth.

    python bench/soak_bench.py --seconds 300 --store postgres --search opensearch

A world of its own (a database of its own on the real server, Kafka topics and a MAE group of
its own, prefixed indices, removed afterwards), DataHub 1.7.0's deployment rows (the release
guard), a LiveLoad writing `--rate` aspects a second to three fifths of the entities, and a chaos
thread injecting, into the other two fifths, a lost index write, a dropped MCL, an orphan, a
consumer pause and a partial restore (every kind once in a random order, then again; a fault
every `--fault-every` seconds on average, seeded). `heal_once` runs every `--heal-every` seconds
under a policy healing what two scans saw (orphans pruned). What each fault is expected to do is
in tests/scenarios/heal_soak.py and docs/benchmark.md.

Reported: faults injected, found and healed by kind; time to heal (injection to the end of the
verified heal); false heals (an entity healed that no fault touched: a live write that would
have converged); pages (a guard refused) and whether a fault caused them; the final scan; and the
index against what the sandbox's own indexer makes of the rows. A table, then one JSON
line. Exit 1 when the soak's promises do not hold.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "scenarios"))

from heal_soak import Soak, SoakConfig  # noqa: E402
from world import World  # noqa: E402


def main() -> int:
    d = SoakConfig()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--store", default="postgres", choices=("postgres", "mariadb"))
    parser.add_argument("--search", default="opensearch", choices=("opensearch", "elasticsearch"))
    parser.add_argument("-n", type=int, default=300, help="entities in the seed catalog [300]")
    parser.add_argument(
        "--seconds", type=float, default=d.seconds, help="live writes and faults [%(default)s]"
    )
    parser.add_argument("--rate", type=float, default=d.rate, help="live writes a second [%(default)s]")
    parser.add_argument("--heal-every", type=float, default=d.heal_every, help="[%(default)s] s")
    parser.add_argument("--fault-every", type=float, default=d.fault_every, help="mean, [%(default)s] s")
    parser.add_argument("--pause-seconds", type=float, default=d.pause_seconds, help="[%(default)s]")
    parser.add_argument("--restore-size", type=int, default=d.restore_size, help="[%(default)s] documents")
    parser.add_argument("--after-scans", type=int, default=d.after_scans, help="the policy's [%(default)s]")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--json-out", type=Path, help="the whole result (every fault and heal) as JSON")
    args = parser.parse_args()
    config = SoakConfig(seconds=args.seconds, rate=args.rate, heal_every=args.heal_every,
                        fault_every=args.fault_every, pause_seconds=args.pause_seconds,
                        restore_size=args.restore_size, after_scans=args.after_scans,
                        seed=args.seed)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        world = World(args.store, args.search, Path(tmp), n=args.n, release="1.7.0", own_database=True)
        try:
            result = Soak(world, Path(tmp), config).run()
        finally:
            world.consumer.reset_faults()
            world.close()
    summary = result.summary()
    load = os.getloadavg()
    print(f"{args.store}/{args.search}, n={args.n}, {config.seconds:g} s at {config.rate:g} writes/s, "
          f"a heal every {config.heal_every:g} s, a fault every ~{config.fault_every:g} s, "
          f"seed {config.seed}; load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")  # fmt: skip
    print(result.table())
    if args.json_out:
        whole = {"config": asdict(config), "summary": summary, "faults": [f.to_json() for f in result.faults],
                 "heals": [h.to_json() for h in result.heals]}  # fmt: skip
        args.json_out.write_text(json.dumps(whole, indent=1), encoding="utf-8")
    print(json.dumps({"store": args.store, "search": args.search, "n": args.n, **asdict(config), **summary,
                      "load": [round(x, 1) for x in load]}))  # fmt: skip
    ok = not (
        summary["false_heals"]
        or summary["pages_without_cause"]
        or summary["unhealed"]
        or summary["heal_errors"]
    )
    return 0 if ok and summary["truth_equal"] and summary["final_exit_code"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
