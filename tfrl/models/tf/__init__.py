"""Keras 3 models (fully connected, conv, LSTM) and TFP action distributions."""
