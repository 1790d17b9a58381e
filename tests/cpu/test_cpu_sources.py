"""The control processor's generated and mirrored sources agree with their originals
(pure Python, runs nothing): the default image baked into the NIC
(hw/src/offnic/cpu/DefaultFirmware.scala) is today's `./offnic firmware` build, and
every register offset the hardware decodes (FwBusMap.scala) is the one
firmware/include/fw_bus.h gives the firmware."""
import re

from offnic_sim import firmware
from offnic_sim.fw import defs
from offnic_sim.harness import hw

FW_BUS_MAP = hw.ROOT / "hw" / "src" / "offnic" / "cpu" / "FwBusMap.scala"

# FwBusMap name -> fw_bus.h name, where the rule (CamelCase to FW_UPPER_SNAKE) does not give it
SPECIAL = {"Magic": "FW_BUS_MAGIC", "ImemBase": "FW_IMEM_BASE", "DmemBase": "FW_DMEM_BASE",
           "MemMaxBytes": "FW_MEM_MAX_BYTES", "NicBase": "FW_NIC_BASE", "BusBase": "FW_BUS_BASE",
           "BusWindow": "FW_BUS_WINDOW", "LogWords": None, "EventQueueDepth": None}


def snake(name: str) -> str:
    return "FW_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def test_default_image_is_current():
    img = firmware.build()
    assert firmware.DEFAULT_IMAGE_SCALA.read_text() == firmware.default_image_scala(img), \
        "the NIC's baked-in firmware is not today's build: run ./offnic firmware and commit DefaultFirmware.scala"


def test_bus_map_matches_fw_bus_h():
    text = FW_BUS_MAP.read_text()
    pairs = re.findall(r"val (\w+) = (0x[0-9a-fA-F]+|\d+)L?", text)
    assert len(pairs) > 30
    checked = 0
    for name, value in pairs:
        c_name = SPECIAL.get(name, snake(name))
        if c_name is None:
            continue
        assert getattr(defs, c_name) == int(value, 0), f"FwBusMap.{name} = {value}, fw_bus.h {c_name}"
        checked += 1
    assert defs.FW_LOG_RECORDS * defs.FW_LOG_RECORD_WORDS == int(dict(pairs)["LogWords"])
    assert checked == len(pairs) - 2
