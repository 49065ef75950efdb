"""The run file: schema, reading (with problems), writing, folders and companions, safe YAML."""
