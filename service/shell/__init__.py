"""What the command line needs beyond the use cases: answering in process (with calibrations
kept between runs) or from a running server, and printing answers for people."""
