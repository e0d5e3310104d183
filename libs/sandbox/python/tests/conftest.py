"""The zygote package's tests import it from libs/sandbox/python (as `python -m rstar_zygote` does)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
