"""roller.finalize"""
