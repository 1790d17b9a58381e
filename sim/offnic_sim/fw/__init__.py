"""The host's side of the control processor's firmware (firmware/): its constants, read
from the firmware's own headers, and reference models of what it does."""
