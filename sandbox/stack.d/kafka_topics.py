"""Kafka readiness probe and topic bootstrap for sandbox/stack (uses confluent_kafka).

usage: kafka_topics.py BOOTSTRAP probe
       kafka_topics.py BOOTSTRAP create NAME:PARTITIONS [NAME:PARTITIONS ...]
Exit 0 on success, 1 otherwise (message on stderr).
"""

import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic


def main() -> int:
    bootstrap, action, *specs = sys.argv[1:]
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 3000})
    try:
        md = admin.list_topics(timeout=3)
    except KafkaException as e:
        print(f"metadata request failed: {e}", file=sys.stderr)
        return 1
    if not md.brokers:
        print("metadata returned no brokers", file=sys.stderr)
        return 1
    if action == "probe":
        return 0
    wanted = []
    for spec in specs:
        name, parts = spec.rsplit(":", 1)
        if name not in md.topics:
            wanted.append(NewTopic(name, num_partitions=int(parts), replication_factor=1))
    if not wanted:
        return 0
    rc = 0
    for name, fut in admin.create_topics(wanted, request_timeout=15).items():
        try:
            fut.result()
            print(f"created topic {name}")
        except KafkaException as e:
            err = e.args[0]
            if getattr(err, "code", lambda: None)() == 36:  # TOPIC_ALREADY_EXISTS
                continue
            print(f"create {name} failed: {e}", file=sys.stderr)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
