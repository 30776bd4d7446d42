"""roller.harnesses"""
