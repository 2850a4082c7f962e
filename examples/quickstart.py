"""The quick start, from a checkout: `keras-bert quickstart` (`keras_bert/jobs/quickstart.py`)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_bert.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["quickstart", *sys.argv[1:]]))
