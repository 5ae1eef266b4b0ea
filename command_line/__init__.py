"""The command-line convention every binary of the project shares; no TensorFlow here."""
