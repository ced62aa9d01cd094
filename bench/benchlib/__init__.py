"""bench/compare's library: the harness (harness.py), the one RESP client (client.py), and one
file per part (part_<name>.py), each holding the part's run and its report together."""
