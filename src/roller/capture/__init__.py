"""roller.capture"""
