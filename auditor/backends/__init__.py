"""The shared backends: the search cluster, bulk writes, the scan state, Kafka's commit log and
Avro framing (each platform's store and change log are in its home)."""
