"""Keras 3 models (fully connected, conv, LSTM) and action distributions (plain TF ops)."""
