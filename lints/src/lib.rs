//! devcheck-lint: finds host syncs inside hot loops of tch code (being built).
