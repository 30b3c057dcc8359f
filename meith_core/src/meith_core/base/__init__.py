"""Foundation: ids, paths and the one containment check, MEITH_HOME files, environment knobs, runtime records. Imports nothing else of meith_core."""
