"""The board flow's generators: board facts (constraints/<board>/board.toml) into XDC,
the vendor IP's Tcl and the Vivado batch flow."""
