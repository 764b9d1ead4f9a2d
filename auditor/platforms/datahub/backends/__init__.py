"""DataHub's readers and writers: the aspect table, its change log (Kafka or pgQueue), federations."""
