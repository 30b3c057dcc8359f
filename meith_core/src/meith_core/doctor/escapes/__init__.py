"""The entries of the escape corpus, one module each, each defining `ENTRY`
(`meith_core.doctor.corpus.Entry`). Add one for every attack reproduced."""
