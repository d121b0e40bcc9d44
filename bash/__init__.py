"""Ships bash/gwtrace.sh inside the Python package, so `gwtrace lib` can print its path."""
