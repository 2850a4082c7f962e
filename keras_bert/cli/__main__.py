"""`python -m keras_bert.cli`: the same as the `keras-bert` console script."""

import sys

from keras_bert.cli import main

sys.exit(main())
